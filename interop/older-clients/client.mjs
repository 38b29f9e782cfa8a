#!/usr/bin/env node
// Initialize-era clients against `snodo serve` with no server flags:
//   --client sdk-2025-03-26   the official TypeScript SDK 1.11.5: speaks 2025-03-26 and
//                             sends no MCP-Protocol-Version header
//   --client header-dropping  the official TypeScript SDK 1.32.2 (2025-11-25) behind a
//                             fetch that drops MCP-Protocol-Version after initialize, as
//                             Gemini CLI 0.61's transport wrapper does
// Each lists tools, calls `search`, reads hello.txt through the template, gets the
// `review_file` prompt. The wire is recorded: the negotiated version and the version
// header of every request appear in the step names.
//
// Usage: node client.mjs --url URL --client NAME
// Output: "ok <step>" / "FAIL <step>: <reason>", last line "N passed, M failed".

import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
    options: { url: { type: 'string' }, client: { type: 'string' } },
    strict: true
});
const CLIENTS = ['sdk-2025-03-26', 'header-dropping'];
if (!args.url || !CLIENTS.includes(args.client)) {
    console.error(`usage: node client.mjs --url URL --client ${CLIENTS.join('|')}`);
    process.exit(2);
}

// ---- the wire, as the client sends it ------------------------------------------
const sent = []; // { method, header, status }
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    if (args.client === 'header-dropping') headers.delete('mcp-protocol-version');
    let method = init.method ?? 'GET';
    if (typeof init.body === 'string') {
        try {
            const b = JSON.parse(init.body);
            method = Array.isArray(b) ? `batch(${b.length})` : b.method ?? `response ${b.id}`;
        } catch {
            /* not JSON */
        }
    }
    const res = await realFetch(input, { ...init, headers });
    sent.push({ method, header: headers.get('mcp-protocol-version'), status: res.status });
    return res;
};

const sdk = args.client === 'sdk-2025-03-26' ? 'sdk-2025-03-26' : 'sdk-current';
const { Client } = await import(`${sdk}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/client/streamableHttp.js`);

let passed = 0;
let failed = 0;
async function step(name, fn) {
    try {
        const info = await fn();
        passed++;
        console.log(`ok ${name}${info ? ` (${info})` : ''}`);
    } catch (e) {
        failed++;
        console.log(`FAIL ${name}: ${e?.message ?? e}`);
    }
}
function check(cond, msg) {
    if (!cond) throw new Error(msg);
}

const client = new Client({ name: `snodo-interop-${args.client}`, version: '0.1.0' });
const transport = new StreamableHTTPClientTransport(new URL(args.url));
let negotiated = '?';

await step('initialize', async () => {
    await client.connect(transport);
    negotiated = transport.protocolVersion ?? (args.client === 'sdk-2025-03-26' ? '2025-03-26' : '?');
    const server = client.getServerVersion();
    check(server?.name, `no serverInfo: ${JSON.stringify(server)}`);
    return `server ${server.name} ${server.version}, client proposes ${negotiated}`;
});

await step('tools/list', async () => {
    const r = await client.listTools();
    const search = r.tools.find(t => t.name === 'search');
    check(search, `no search tool in ${JSON.stringify(r.tools.map(t => t.name))}`);
    return `${r.tools.length} tool(s)${search.outputSchema ? ', search has an outputSchema' : ', no outputSchema'}`;
});

await step('tools/call search', async () => {
    const r = await client.callTool({ name: 'search', arguments: { query: 'hello' } });
    check(!r.isError, `isError: ${JSON.stringify(r)}`);
    const text = (r.content ?? []).map(c => c.text ?? '').join('\n');
    check(text.includes('hello.txt'), `text content does not mention hello.txt: ${JSON.stringify(r)}`);
    return `text content names hello.txt${r.structuredContent ? ', with structuredContent' : ''}`;
});

await step('resources/read hello.txt', async () => {
    const t = await client.listResourceTemplates();
    const tpl = t.resourceTemplates[0]?.uriTemplate;
    check(typeof tpl === 'string', `no template: ${JSON.stringify(t)}`);
    const uri = tpl.replace(/\{\+?path\}/, 'hello.txt');
    const r = await client.readResource({ uri });
    check(r.contents?.[0]?.text?.includes('hello world'), `contents: ${JSON.stringify(r)}`);
    return uri;
});

await step('prompts/get review_file', async () => {
    const r = await client.getPrompt({ name: 'review_file', arguments: { path: 'hello.txt' } });
    check(JSON.stringify(r.messages).includes('hello world'), `messages: ${JSON.stringify(r.messages)}`);
    return `${r.messages.length} message(s)`;
});

await client.close().catch(() => {});

// The exchange, as it went over the wire.
const posts = sent.filter(s => s.method !== 'GET' && s.method !== 'DELETE');
const later = posts.filter(s => s.method !== 'initialize');
const withHeader = later.filter(s => s.header).length;
console.log(
    `# wire: ${posts.map(s => `${s.method}${s.header ? `[${s.header}]` : ''}→${s.status}`).join(' ')}`
);
await step(
    `exchange: initialize at ${negotiated}, ${later.length} later request(s), ${withHeader} with MCP-Protocol-Version`,
    async () => {
        check(posts.every(s => s.status >= 200 && s.status < 300), 'a POST was answered with a non-2xx status');
        if (args.client === 'header-dropping' || args.client === 'sdk-2025-03-26') {
            check(withHeader === 0, 'the client was expected to send no version header');
        }
    }
);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
