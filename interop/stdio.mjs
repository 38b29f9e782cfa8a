#!/usr/bin/env node
// Real-client interop over stdio: the official MCP TypeScript SDKs launch snodo as a
// child process, the way desktop clients do.
//   --sdk v2  @modelcontextprotocol/client 2.4.0, automatic negotiation (server/discover
//             probe, expected 2026-07-28)
//   --sdk v1  @modelcontextprotocol/sdk 1.32.2, initialize handshake (2025-11-25)
//
// Usage: node stdio.mjs --sdk v2|v1 --bin SNODO --root DIR [--timeout MS]
//   DIR must hold hello.txt = "hello world\n" (stdio.sh lays it out).
// Output: "ok <step>" / "FAIL <step>: <reason>", then "N passed, M failed".

import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
    options: {
        sdk: { type: 'string' },
        bin: { type: 'string' },
        root: { type: 'string' },
        timeout: { type: 'string', default: '15000' }
    },
    strict: true
});
if (!['v1', 'v2'].includes(args.sdk) || !args.bin || !args.root) {
    console.error('usage: node stdio.mjs --sdk v2|v1 --bin SNODO --root DIR');
    process.exit(2);
}
const REQ = { timeout: Number(args.timeout) };
const WANT = args.sdk === 'v2' ? '2026-07-28' : '2025-11-25';

let passed = 0;
let failed = 0;
class Check extends Error {}
const check = (cond, msg) => {
    if (!cond) throw new Check(msg);
};
const short = v => {
    const s = JSON.stringify(v);
    return s === undefined ? 'undefined' : s.length > 300 ? s.slice(0, 300) + '…' : s;
};
async function step(name, fn) {
    try {
        const info = await fn();
        passed++;
        console.log(`ok ${name}${info ? `  # ${info}` : ''}`);
        return true;
    } catch (e) {
        failed++;
        const why = e instanceof Check ? e.message : `${e?.name}: ${e?.message}${e?.code !== undefined ? ` (code ${e.code})` : ''}`;
        console.log(`FAIL ${name}: ${String(why).replace(/\s*\n\s*/g, ' ')}`);
        return false;
    }
}

/** Connects an SDK client to `snodo <serverArgs>` over stdio; records the wire. */
async function connect(serverArgs) {
    // `at`: the order in which messages crossed the wire, both directions.
    const wire = { sent: [], received: [], at: new Map() };
    let client;
    let transport;
    const params = { command: args.bin, args: serverArgs, stderr: 'ignore' };
    if (args.sdk === 'v2') {
        const { Client } = await import('@modelcontextprotocol/client');
        const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
        client = new Client(
            { name: 'snodo-stdio-interop', version: '0.1.0' },
            { capabilities: {}, versionNegotiation: { mode: 'auto', probe: { timeoutMs: REQ.timeout } } }
        );
        transport = new StdioClientTransport(params);
    } else {
        const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
        const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
        client = new Client({ name: 'snodo-stdio-interop', version: '0.1.0' }, { capabilities: {} });
        transport = new StdioClientTransport(params);
    }
    const send = transport.send.bind(transport);
    transport.send = (m, o) => {
        wire.sent.push(m);
        wire.at.set(m, wire.at.size);
        return send(m, o);
    };
    client.onerror = e => console.log(`# client onerror: ${e?.message ?? e}`);
    await client.connect(transport, REQ);
    const onmessage = transport.onmessage;
    transport.onmessage = (m, extra) => {
        wire.received.push(m);
        wire.at.set(m, wire.at.size);
        onmessage?.(m, extra);
    };
    const negotiated =
        args.sdk === 'v2' ? client.getNegotiatedProtocolVersion() : transport.protocolVersion ?? WANT;
    const callTool =
        args.sdk === 'v2' ? (p, o = REQ) => client.callTool(p, o) : (p, o = REQ) => client.callTool(p, undefined, o);
    return { client, transport, wire, negotiated, callTool };
}

async function closeAndExpectExit(c) {
    const pid = c.transport.pid;
    await c.client.close();
    for (let i = 0; i < 50; i++) {
        try {
            process.kill(pid, 0);
        } catch {
            return `pid ${pid} exited`;
        }
        await new Promise(r => setTimeout(r, 100));
    }
    throw new Check(`snodo (pid ${pid}) still runs 5 s after its stdin closed`);
}

async function main() {
    console.log(`# ${args.sdk === 'v2' ? '@modelcontextprotocol/client 2.4.0' : '@modelcontextprotocol/sdk 1.32.2'} over stdio, want ${WANT}`);
    let c;
    const connected = await step('connect (snodo serve --stdio)', async () => {
        c = await connect(['serve', '--stdio', '--legacy', '--root', args.root]);
        return `negotiated ${c.negotiated}`;
    });
    if (connected) {
        await step('version', async () => check(c.negotiated === WANT, `negotiated ${c.negotiated}, want ${WANT}`));
        await step('tools/list', async () => {
            const r = await c.client.listTools(undefined, REQ);
            check(r.tools.some(t => t.name === 'search'), `no search tool: ${short(r.tools.map(t => t.name))}`);
        });
        await step('tools/call search', async () => {
            const r = await c.callTool({ name: 'search', arguments: { query: 'hello' } });
            check(r.isError !== true, `isError: ${short(r.content)}`);
            check(JSON.stringify(r).includes('hello.txt'), `hello.txt not found: ${short(r)}`);
        });
        await step('resources/list + read', async () => {
            const list = await c.client.listResources(undefined, REQ);
            const hello = list.resources.find(x => x.uri.endsWith('/hello.txt'));
            check(hello, `no hello.txt in ${short(list.resources.map(x => x.uri))}`);
            const r = await c.client.readResource({ uri: hello.uri }, REQ);
            check(JSON.stringify(r.contents).includes('hello world'), `contents ${short(r.contents)}`);
            return hello.uri;
        });
        await step('prompts/get review_file', async () => {
            const r = await c.client.getPrompt({ name: 'review_file', arguments: { path: 'hello.txt' } }, REQ);
            check(JSON.stringify(r.messages).includes('hello world'), `messages ${short(r.messages)}`);
        });
        await step('stdout carries only MCP messages', async () => {
            check(c.wire.received.every(m => m?.jsonrpc === '2.0'), `non-JSON-RPC: ${short(c.wire.received)}`);
            check(!c.wire.received.some(m => m.method && m.id !== undefined && WANT === '2026-07-28'), 'the server wrote a request on 2026-07-28');
        });
        await step('close ends the server', () => closeAndExpectExit(c));
    }

    // Cancellation: the fixture's progress tool runs ~150 ms; the client aborts it.
    let f;
    const fixture = await step('connect (snodo fixture --stdio)', async () => {
        f = await connect(['fixture', '--stdio']);
        return `negotiated ${f.negotiated}`;
    });
    if (fixture) {
        await step('cancellation', async () => {
            // On a loaded machine the 40 ms timer can fire after the tool finished; a
            // result that arrived before the cancel was sent says nothing about the
            // server, so that attempt is made again (at most three times).
            for (let attempt = 1; ; attempt++) {
                const abort = new AbortController();
                const sentBefore = f.wire.sent.length;
                const call = f.callTool({ name: 'test_tool_with_progress', arguments: {} }, { ...REQ, signal: abort.signal });
                setTimeout(() => abort.abort('interop cancel'), 40);
                let rejected = false;
                try {
                    await call;
                } catch {
                    rejected = true;
                }
                const sent = f.wire.sent.slice(sentBefore);
                const req = sent.find(m => m.method === 'tools/call' && m.params?.name === 'test_tool_with_progress');
                const cancel = sent.find(m => m.method === 'notifications/cancelled');
                await new Promise(r => setTimeout(r, 400));
                const late = f.wire.received.filter(m => m.id === req?.id);
                const raced = !cancel || late.some(m => f.wire.at.get(m) < f.wire.at.get(cancel));
                if (raced && attempt < 3) {
                    console.log(`# cancellation attempt ${attempt}: the call finished before the cancel was sent; again`);
                    continue;
                }
                check(rejected, 'the aborted call resolved');
                check(req && cancel && cancel.params.requestId === req.id, `no notifications/cancelled for ${req?.id}: ${short(sent)}`);
                check(late.length === 0, `the cancelled request was answered: ${short(late)}`);
                const after = await f.callTool({ name: 'echo', arguments: { text: 'after' } });
                check(JSON.stringify(after).includes('after'), `echo after cancel: ${short(after)}`);
                return `request ${req.id} cancelled, nothing written for it (attempt ${attempt})`;
            }
        });
        await step('close ends the fixture', () => closeAndExpectExit(f));
    }
}

try {
    await main();
} catch (e) {
    failed++;
    console.log(`FAIL client: unexpected: ${e?.stack ?? e}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
