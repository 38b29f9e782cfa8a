#!/usr/bin/env node
// The official TypeScript SDK v2 client (@modelcontextprotocol/client) over HTTP/2:
// its transport's fetch is undici's, with an Agent that offers `h2` by ALPN over TLS
// (`allowH2`), or an H2CClient that speaks HTTP/2 by prior knowledge to an http:// URL
// (undici's Agent does not hand `useH2c` to its pools).
//
//   node h2_client.mjs URL [CA_PEM]
//
// Steps: connect (2026-07-28), tools/list, tools/call echo, a call answered over SSE
// with progress notifications, and 20 calls at once. Every connection undici opens is
// recorded (undici:client:connected): each must have negotiated h2. (undici sends no
// two non-idempotent requests, POSTs, on one HTTP/2 connection at once: over TLS its
// Agent opens a connection per concurrent call, the H2CClient queues them.) One line per step, "ok ..." or
// "FAIL ...", then "N passed, M failed"; exit 0 iff M == 0.

import diagnostics from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { Agent, H2CClient, fetch as undiciFetch } from 'undici';

const [url, caFile] = process.argv.slice(2);
if (!url) {
    console.error('usage: node h2_client.mjs URL [CA_PEM]');
    process.exit(2);
}
const tls = url.startsWith('https:');
const agent = tls ? new Agent({ allowH2: true, connect: { ca: readFileSync(caFile) } }) : new H2CClient(new URL(url).origin);
const connections = [];
diagnostics.channel('undici:client:connected').subscribe(({ socket }) => {
    connections.push(socket.alpnProtocol || 'http/1.1');
});
const h2fetch = (input, init) => undiciFetch(input, { ...init, dispatcher: agent });

let passed = 0;
let failed = 0;
const mode = tls ? 'h2 (TLS, ALPN)' : 'h2c (prior knowledge)';
async function step(name, body) {
    try {
        const info = await body();
        passed++;
        console.log(`ok   ts-sdk ${mode}: ${name}${info ? ` (${info})` : ''}`);
    } catch (e) {
        failed++;
        console.log(`FAIL ts-sdk ${mode}: ${name}: ${e?.cause?.message ?? e?.message ?? e}`);
    }
}
function check(cond, what) {
    if (!cond) throw new Error(what);
}
const text = r => (r.content ?? []).map(c => c.text ?? '').join('');
const REQ = { timeout: 15000 };

const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
const client = new Client(
    { name: 'snodo-h2-interop', version: '0.1.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' }, probe: { timeoutMs: 15000 } } }
);
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: h2fetch });

await step('connect', async () => {
    await client.connect(transport, REQ);
    const v = client.getNegotiatedProtocolVersion();
    check(v === '2026-07-28', `negotiated ${v}`);
    return v;
});
await step('tools/list', async () => {
    const r = await client.listTools({}, REQ);
    check(r.tools.some(t => t.name === 'echo'), `no echo among ${r.tools.length} tools`);
    return `${r.tools.length} tools`;
});
await step('tools/call echo', async () => {
    const r = await client.callTool({ name: 'echo', arguments: { text: 'over h2' } }, REQ);
    check(text(r).includes('over h2'), JSON.stringify(r));
});
await step('progress over an SSE stream', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { ...REQ, onprogress: p => seen.push(p.progress) });
    check(!r.isError, JSON.stringify(r));
    check(seen.length >= 1, `no progress notification (${JSON.stringify(r)})`);
    return `progress ${seen.join(',')}`;
});
await step('20 calls at once', async () => {
    const before = connections.length;
    const calls = Array.from({ length: 20 }, (_, i) => client.callTool({ name: 'echo', arguments: { text: `c${i}` } }, REQ));
    const rs = await Promise.all(calls);
    rs.forEach((r, i) => check(text(r).includes(`c${i}`), `call ${i}: ${JSON.stringify(r)}`));
    return `${connections.length - before} new connection(s)`;
});
await step('every connection negotiated h2', async () => {
    check(connections.length >= 1, 'no connection seen');
    check(connections.every(p => p === 'h2'), `connections: ${connections.join(', ')}`);
    return `${connections.length} connection(s): ${connections.join(', ')}`;
});

await client.close().catch(() => {});
await agent.close().catch(() => {});
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
