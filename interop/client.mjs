#!/usr/bin/env node
// Real-client interop check for `snodo serve`, driven by the official MCP
// TypeScript SDKs:
//   2026-07-28             -> @modelcontextprotocol/client (v2), pinned via server/discover
//   2025-11-25, 2025-06-18 -> @modelcontextprotocol/sdk (v1), initialize handshake
//
// Usage:
//   node client.mjs --url http://127.0.0.1:PORT/mcp --version 2026-07-28 \
//       [--fixture] [--trace FILE] [--timeout MS]
//
//   --fixture   also check content against the fixture tree laid out by run.sh
//               (hello.txt = "hello world\n"): the search finds hello.txt, the
//               template read returns "hello world", the prompt embeds it.
//   --trace F   append every HTTP exchange (request headers/body, response
//               status/headers/body) to F. INTEROP_TRACE=F does the same.
//
// Output: one line per step, "ok <step>" or "FAIL <step>: <reason>", lines
// starting with "#" are information, the last line is "N passed, M failed".
// Exit status 0 iff M == 0.

import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18'];

function usage(msg) {
    if (msg) console.error(`client.mjs: ${msg}`);
    console.error(
        'usage: node client.mjs --url URL --version 2026-07-28|2025-11-25|2025-06-18 [--fixture] [--trace FILE] [--timeout MS]'
    );
    process.exit(2);
}

let args;
try {
    args = parseArgs({
        options: {
            url: { type: 'string' },
            version: { type: 'string' },
            fixture: { type: 'boolean', default: false },
            trace: { type: 'string' },
            timeout: { type: 'string', default: '15000' },
            help: { type: 'boolean', short: 'h', default: false }
        },
        strict: true,
        allowPositionals: false
    }).values;
} catch (e) {
    usage(e.message);
}
if (args.help) usage();
if (!args.url) usage('--url is required');
if (!VERSIONS.includes(args.version)) usage(`--version must be one of ${VERSIONS.join(', ')}`);
const TIMEOUT = Number(args.timeout);
if (!Number.isFinite(TIMEOUT) || TIMEOUT <= 0) usage('--timeout must be a positive number of milliseconds');
const TRACE = args.trace ?? process.env.INTEROP_TRACE ?? '';
const WANT = args.version;
const REQ = { timeout: TIMEOUT };

// ---------------------------------------------------------------- wire trace

const pendingTrace = new Set();
function trace(line) {
    if (!TRACE) return;
    try {
        appendFileSync(TRACE, line + '\n');
    } catch {
        /* tracing must never break the run */
    }
}
function headerLines(h) {
    const out = [];
    h.forEach((v, k) => out.push(`    ${k}: ${v}`));
    return out.join('\n');
}
function bodyText(body) {
    if (body == null) return '';
    if (typeof body === 'string') return body;
    if (body instanceof Uint8Array || body instanceof ArrayBuffer) return Buffer.from(body).toString('utf8');
    return `<${Object.prototype.toString.call(body)}>`;
}

let exchange = 0;
async function tracingFetch(input, init = {}) {
    const n = ++exchange;
    const method = init.method ?? 'GET';
    const url = typeof input === 'string' ? input : (input.url ?? String(input));
    trace(`>>> [${WANT}] #${n} ${method} ${url}\n${headerLines(new Headers(init.headers))}`);
    const body = bodyText(init.body);
    if (body) trace(`>>> #${n} body: ${body}`);
    let res;
    try {
        res = await fetch(input, init);
    } catch (e) {
        trace(`<<< #${n} fetch error: ${e?.cause?.message ?? e?.message ?? e}`);
        throw e;
    }
    trace(`<<< #${n} ${res.status} ${res.statusText}\n${headerLines(res.headers)}`);
    if (res.body) {
        const p = res
            .clone()
            .text()
            .then(
                t => trace(`<<< #${n} body: ${t}`),
                e => trace(`<<< #${n} body read ended: ${e?.message ?? e}`)
            )
            .finally(() => pendingTrace.delete(p));
        pendingTrace.add(p);
    }
    return res;
}

// ------------------------------------------------------------------- results

let passed = 0;
let failed = 0;
function ok(step, info) {
    passed++;
    console.log(`ok ${step}`);
    if (info) console.log(`#   ${info}`);
}
function fail(step, reason) {
    failed++;
    console.log(`FAIL ${step}: ${oneLine(reason)}`);
}
function oneLine(s) {
    return String(s).replace(/\s*\n\s*/g, ' ');
}
function describeError(e) {
    if (!(e instanceof Error)) return `thrown non-error ${JSON.stringify(e)}`;
    let s = `${e.name}: ${e.message}`;
    if (e.code !== undefined && !String(e.message).includes(String(e.code))) s += ` (code ${e.code})`;
    if (e.data !== undefined) {
        try {
            s += ` data=${JSON.stringify(e.data)}`;
        } catch {
            /* ignore */
        }
    }
    for (let c = e.cause, i = 0; c && i < 4; c = c.cause, i++) s += ` cause=${c.code ? c.code + ' ' : ''}${c.message ?? short(c)}`;
    return s;
}
class Check extends Error {}
function check(cond, msg) {
    if (!cond) throw new Check(msg);
}
const short = v => {
    const s = JSON.stringify(v);
    return s === undefined ? 'undefined' : s.length > 300 ? s.slice(0, 300) + '…' : s;
};

// Runs one step. `fn` returns an optional info string; a thrown Check or
// error becomes the FAIL reason. A step whose prerequisite is missing fails
// with "skipped: <why>" so that every run reports the same step count.
async function step(name, fn, { needs } = {}) {
    if (needs !== undefined && needs !== true) {
        fail(name, `skipped: ${needs}`);
        return undefined;
    }
    try {
        const r = await fn();
        ok(name, r?.info);
        return r?.value ?? true;
    } catch (e) {
        fail(name, e instanceof Check ? e.message : describeError(e));
        return undefined;
    }
}

// ------------------------------------------------------------------- clients

const clientInfo = { name: 'snodo-interop', version: '0.1.0' };

async function connectV2() {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client(clientInfo, {
        capabilities: {},
        versionNegotiation: { mode: { pin: WANT }, probe: { timeoutMs: TIMEOUT } }
    });
    const transport = new StreamableHTTPClientTransport(new URL(args.url), { fetch: tracingFetch });
    client.onerror = e => console.log(`# client onerror: ${oneLine(describeError(e))}`);
    await client.connect(transport, REQ);
    return {
        client,
        sdk: '@modelcontextprotocol/client 2.4.0',
        negotiated: () => client.getNegotiatedProtocolVersion(),
        era: () => client.getProtocolEra?.(),
        // v2: callTool(params, options)
        callTool: params => client.callTool(params, REQ)
    };
}

async function connectV1() {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client(clientInfo, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(args.url), { fetch: tracingFetch });
    // The v1 Client always offers its LATEST_PROTOCOL_VERSION (2025-11-25) and
    // has no option to offer another one, so the outgoing initialize is
    // rewritten to offer exactly the requested version. The SDK accepts any
    // version in its SUPPORTED_PROTOCOL_VERSIONS answer and then sends it as
    // MCP-Protocol-Version on every later request.
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        if (message?.method === 'initialize' && message.params) {
            message = { ...message, params: { ...message.params, protocolVersion: WANT } };
        }
        return send(message, options);
    };
    client.onerror = e => console.log(`# client onerror: ${oneLine(describeError(e))}`);
    await client.connect(transport, REQ);
    const answered = transport.protocolVersion;
    return {
        client,
        sdk: '@modelcontextprotocol/sdk 1.32.2',
        negotiated: () => answered,
        era: () => 'legacy',
        // v1: callTool(params, resultSchema?, options?)
        callTool: params => client.callTool(params, undefined, REQ)
    };
}

// ----------------------------------------------------------------- the steps

function expandTemplate(tpl, value) {
    // RFC 6570 level 1/2 for the one variable we fill: {+path} keeps reserved
    // characters, {path} percent-encodes them.
    let used = false;
    const uri = tpl.replace(/\{(\+?)path\}/g, (_, plus) => {
        used = true;
        return plus ? encodeURI(value) : encodeURIComponent(value);
    });
    return { uri, used };
}

function textOf(contents) {
    return (contents ?? [])
        .map(c => (typeof c.text === 'string' ? c.text : typeof c.blob === 'string' ? Buffer.from(c.blob, 'base64').toString('utf8') : ''))
        .join('');
}

async function main() {
    console.log(`# client ${WANT === '2026-07-28' ? '@modelcontextprotocol/client 2.4.0' : '@modelcontextprotocol/sdk 1.32.2'} -> ${args.url} (want ${WANT})`);

    const conn = await step('connect', async () => {
        const c = WANT === '2026-07-28' ? await connectV2() : await connectV1();
        const sv = c.client.getServerVersion?.();
        return { value: c, info: `server ${short(sv)} capabilities ${short(c.client.getServerCapabilities?.())}` };
    });
    const notConnected = conn ? true : 'not connected';

    await step(
        'version',
        async () => {
            const got = conn.negotiated();
            check(got === WANT, `negotiated ${short(got)}, requested ${WANT}`);
            const era = conn.era();
            const wantEra = WANT === '2026-07-28' ? 'modern' : 'legacy';
            check(era === undefined || era === wantEra, `era ${era}, expected ${wantEra}`);
            return { info: `${got} (${era ?? 'era n/a'})` };
        },
        { needs: notConnected }
    );

    const client = conn?.client;

    const tools = await step(
        'tools/list',
        async () => {
            const r = await client.listTools(undefined, REQ);
            check(Array.isArray(r?.tools), `no tools array: ${short(r)}`);
            const names = r.tools.map(t => t.name);
            check(names.includes('search'), `no tool "search" in ${short(names)}`);
            return { value: r.tools, info: `tools ${short(names)}` };
        },
        { needs: notConnected }
    );

    await step(
        'tools/call search',
        async () => {
            const def = tools.find(t => t.name === 'search');
            const r = await conn.callTool({ name: 'search', arguments: { query: 'hello' } });
            check(r && typeof r === 'object', `result is not an object: ${short(r)}`);
            check(r.isError !== true, `isError: true, content ${short(r.content)}`);
            check(Array.isArray(r.content) && r.content.length > 0, `empty or missing content: ${short(r)}`);
            if (def?.outputSchema) {
                check(
                    r.structuredContent !== undefined && r.structuredContent !== null,
                    `tool declares an outputSchema but the result has no structuredContent: ${short(r)}`
                );
            }
            if (args.fixture) {
                check(JSON.stringify(r).includes('hello.txt'), `search for "hello" did not mention hello.txt: ${short(r)}`);
            }
            return {
                info: `${r.content.length} content block(s)${def?.outputSchema ? `, structuredContent ${short(r.structuredContent)}` : ', no outputSchema'}`
            };
        },
        { needs: tools ? true : 'tools/list failed' }
    );

    const resources = await step(
        'resources/list',
        async () => {
            const r = await client.listResources(undefined, REQ);
            check(Array.isArray(r?.resources) && r.resources.length > 0, `no resources: ${short(r)}`);
            return { value: r.resources, info: `${r.resources.length} resource(s): ${short(r.resources.map(x => x.uri))}` };
        },
        { needs: notConnected }
    );

    await step(
        'resources/read listed',
        async () => {
            const uri = resources[0].uri;
            const r = await client.readResource({ uri }, REQ);
            check(Array.isArray(r?.contents) && r.contents.length > 0, `no contents for ${uri}: ${short(r)}`);
            check(
                r.contents.some(c => (typeof c.text === 'string' && c.text.length > 0) || (typeof c.blob === 'string' && c.blob.length > 0)),
                `contents of ${uri} carry neither text nor blob: ${short(r.contents)}`
            );
            return { info: `${uri}: ${r.contents.length} item(s)` };
        },
        { needs: resources ? true : 'resources/list failed' }
    );

    const templates = await step(
        'resources/templates/list',
        async () => {
            const r = await client.listResourceTemplates(undefined, REQ);
            check(Array.isArray(r?.resourceTemplates) && r.resourceTemplates.length > 0, `no resource templates: ${short(r)}`);
            return { value: r.resourceTemplates, info: `templates ${short(r.resourceTemplates.map(t => t.uriTemplate))}` };
        },
        { needs: notConnected }
    );

    await step(
        'resources/read template',
        async () => {
            const tpl = templates[0].uriTemplate;
            check(typeof tpl === 'string', `first template has no uriTemplate: ${short(templates[0])}`);
            const { uri, used } = expandTemplate(tpl, 'hello.txt');
            check(used, `first template ${short(tpl)} has no {+path} or {path} variable`);
            check(!/[{}]/.test(uri), `template ${short(tpl)} has other unfilled variables: ${uri}`);
            const r = await client.readResource({ uri }, REQ);
            check(Array.isArray(r?.contents) && r.contents.length > 0, `no contents for ${uri}: ${short(r)}`);
            const text = textOf(r.contents);
            check(text.length > 0, `contents of ${uri} are empty: ${short(r.contents)}`);
            if (args.fixture) check(text.includes('hello world'), `contents of ${uri} lack "hello world": ${short(r.contents)}`);
            return { info: `${uri}: ${short(text)}` };
        },
        { needs: templates ? true : 'resources/templates/list failed' }
    );

    const prompts = await step(
        'prompts/list',
        async () => {
            const r = await client.listPrompts(undefined, REQ);
            check(Array.isArray(r?.prompts), `no prompts array: ${short(r)}`);
            const names = r.prompts.map(p => p.name);
            check(names.includes('review_file'), `no prompt "review_file" in ${short(names)}`);
            return { value: r.prompts, info: `prompts ${short(names)}` };
        },
        { needs: notConnected }
    );

    await step(
        'prompts/get review_file',
        async () => {
            const r = await client.getPrompt({ name: 'review_file', arguments: { path: 'hello.txt' } }, REQ);
            check(Array.isArray(r?.messages) && r.messages.length > 0, `no messages: ${short(r)}`);
            if (args.fixture) check(JSON.stringify(r.messages).includes('hello world'), `messages do not embed hello.txt: ${short(r.messages)}`);
            return { info: `${r.messages.length} message(s)` };
        },
        { needs: prompts ? true : 'prompts/list failed' }
    );

    if (client) {
        try {
            await client.close();
        } catch (e) {
            console.log(`# close: ${describeError(e)}`);
        }
    }
}

let crashed = false;
try {
    await main();
} catch (e) {
    crashed = true;
    fail('client', `unexpected: ${describeError(e)}`);
}
// Let response-body trace reads finish (bounded), then report.
if (pendingTrace.size) await Promise.race([Promise.allSettled([...pendingTrace]), new Promise(r => setTimeout(r, 1000))]);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && !crashed ? 0 : 1);
