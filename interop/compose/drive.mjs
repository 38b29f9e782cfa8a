#!/usr/bin/env node
// Drives a front snodo (compose_front) with the official TypeScript clients:
//   2026-07-28                      -> @modelcontextprotocol/client 2.4.0 (pinned)
//   2025-11-25, 2025-06-18, 2025-03-26 -> @modelcontextprotocol/sdk 1.32.2 (initialize rewritten)
//
//   node drive.mjs URL VERSION NS KIND [STEP...]
//
// KIND: everything | py | rmcp | fs (what the backend mounted under NS serves; fs is
// @modelcontextprotocol/server-filesystem serving $FS_ROOT, which holds note.txt).
// STEPS default to all of: list call local read prompt progress cancel complete; `list`
// expects local_echo too when `local` is a step (a front with a local tool, not the
// gateway); `complete` asks completion/complete of a prompt argument and a resource
// template variable (front names and URIs, the backend's values back); `elicit`
// (everything only, not by default) calls the backend's elicitation tool with the
// client answering the form: a server request on an initialize-era front, an
// input_required round on 2026-07-28.
// One line per check, "ok ..." or "FAIL ...", exit 1 on any failure.

const [url, WANT, NS, KIND, ...only] = process.argv.slice(2);
if (!url || !WANT || !NS || !KIND) {
    console.error('usage: node drive.mjs URL VERSION NS KIND [STEP...]');
    process.exit(2);
}
const REQ = { timeout: 30000 };
const TAG = `${KIND}@${NS} x ${WANT}`;
let failed = 0;
const ok = m => console.log(`ok   ${TAG}: ${m}`);
const fail = m => {
    failed++;
    console.log(`FAIL ${TAG}: ${m}`);
};
const want = step => only.length === 0 || only.includes(step);

// The answer to a form: each field's default, and a name.
const ELICITED = [];
const fillForm = params => {
    ELICITED.push(params?.message);
    const content = { name: 'Ada' };
    for (const [k, p] of Object.entries(params?.requestedSchema?.properties ?? {})) {
        if (p.default !== undefined && content[k] === undefined) content[k] = p.default;
    }
    return { action: 'accept', content };
};

async function connect() {
    const info = { name: 'compose-interop', version: '0.1.0' };
    const capabilities = only.includes('elicit') ? { elicitation: {} } : {};
    if (WANT === '2026-07-28') {
        const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
        const client = new Client(info, { capabilities, versionNegotiation: { mode: { pin: WANT } } });
        if (capabilities.elicitation) client.setRequestHandler('elicitation/create', async r => fillForm(r.params));
        await client.connect(new StreamableHTTPClientTransport(new URL(url)), REQ);
        return {
            client,
            callTool: (p, o = {}) => client.callTool(p, { ...REQ, ...o }),
            complete: p => client.complete(p, REQ)
        };
    }
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client(info, { capabilities });
    if (capabilities.elicitation) {
        const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
        client.setRequestHandler(ElicitRequestSchema, async r => fillForm(r.params));
    }
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        if (message?.method === 'initialize' && message.params) {
            message = { ...message, params: { ...message.params, protocolVersion: WANT } };
        }
        return send(message, options);
    };
    await client.connect(transport, REQ);
    if (transport.protocolVersion && transport.protocolVersion !== WANT) {
        throw new Error(`negotiated ${transport.protocolVersion}, wanted ${WANT}`);
    }
    return {
        client,
        callTool: (p, o = {}) => client.callTool(p, undefined, { ...REQ, ...o }),
        complete: p => client.complete(p, REQ)
    };
}

const text = r => (r?.content ?? []).map(c => c.text ?? '').join('');

// What each backend serves (its own names; the front adds NS_ and NS/).
const SPEC = {
    everything: {
        echo: ['echo', { message: 'hi' }, 'Echo: hi'],
        read: ['demo://{NS}/resource/dynamic/text/3', 'Resource 3'],
        prompt: ['args-prompt', { city: 'Paris' }, 'Paris'],
        progress: ['trigger-long-running-operation', { duration: 1, steps: 3 }, 3],
        slow: ['trigger-long-running-operation', { duration: 20, steps: 2 }],
        // [ref kind, backend name or template, argument, value, context, values wanted]
        complete: [
            ['prompt', 'completable-prompt', 'department', 'S', undefined, ['Sales', 'Support']],
            ['prompt', 'completable-prompt', 'name', '', { department: 'Engineering' }, ['Alice', 'Bob', 'Charlie']],
            ['resource', 'demo://{NS}/resource/dynamic/text/{resourceId}', 'resourceId', '7', undefined, ['7']]
        ],
        elicit: ['trigger-elicitation-request', {}, '- Name: Ada']
    },
    py: {
        echo: ['echo', { text: 'hi' }, 'echo: hi'],
        read: ['note://{NS}/greeting', 'hello from Python'],
        prompt: ['greet', { who: 'Ada' }, 'Ada'],
        progress: ['count', { steps: 3, delay: 0.05 }, 3],
        slow: ['count', { steps: 2, delay: 20 }],
        complete: [
            ['prompt', 'greet', 'who', 'A', undefined, ['Ada', 'Alan']],
            ['resource', 'note://{NS}/{name}', 'name', 'g', undefined, ['greeting', 'groceries']]
        ]
    },
    rmcp: { echo: ['echo', { text: 'hi' }, 'hi'] },
    fs: { echo: ['read_text_file', { path: `${process.env.FS_ROOT}/note.txt` }, 'hello from a file'] }
}[KIND];

async function step(name, f) {
    if (!want(name)) return;
    try {
        await f();
    } catch (e) {
        fail(`${name}: ${e?.message ?? e}`);
    }
}

const c = await connect().catch(e => {
    fail(`connect: ${e?.message ?? e}`);
    process.exit(1);
});
const { client } = c;

await step('list', async () => {
    const { tools } = await client.listTools(undefined, REQ);
    const names = tools.map(t => t.name);
    const mine = `${NS}_${SPEC.echo[0]}`;
    const local = want('local');
    if ((local && !names.includes('local_echo')) || !names.includes(mine)) throw new Error(`tools ${names.join(',')}`);
    ok(`list: ${names.length} tools with ${local ? 'local_echo and ' : ''}${mine}`);
});
await step('local', async () => {
    const r = await c.callTool({ name: 'local_echo', arguments: { text: 'x' } });
    if (text(r) !== 'local: x') throw new Error(`local_echo said ${text(r)}`);
    ok('call local_echo');
});
await step('call', async () => {
    const [n, a, t] = SPEC.echo;
    const r = await c.callTool({ name: `${NS}_${n}`, arguments: a });
    if (!text(r).includes(t)) throw new Error(`${n} said ${JSON.stringify(r)}`);
    ok(`call ${NS}_${n}`);
});
if (SPEC.read) {
    await step('read', async () => {
        const uri = SPEC.read[0].replace('{NS}', NS);
        const r = await client.readResource({ uri }, REQ);
        const t = r.contents.map(x => x.text ?? '').join('');
        if (!t.includes(SPEC.read[1]) || r.contents[0].uri !== uri) throw new Error(JSON.stringify(r).slice(0, 300));
        ok(`read ${uri}`);
    });
    await step('prompt', async () => {
        const [n, a, t] = SPEC.prompt;
        const r = await client.getPrompt({ name: `${NS}_${n}`, arguments: a }, REQ);
        if (!JSON.stringify(r.messages).includes(t)) throw new Error(JSON.stringify(r).slice(0, 300));
        ok(`prompt ${NS}_${n}`);
    });
    await step('progress', async () => {
        const [n, a, count] = SPEC.progress;
        const seen = [];
        const r = await c.callTool({ name: `${NS}_${n}`, arguments: a }, { onprogress: p => seen.push(p.progress) });
        if (r.isError || seen.length !== count) throw new Error(`progress ${JSON.stringify(seen)}, ${JSON.stringify(r).slice(0, 200)}`);
        ok(`progress ${JSON.stringify(seen)} relayed from ${NS}_${n}`);
    });
    await step('cancel', async () => {
        const [n, a] = SPEC.slow;
        const ac = new AbortController();
        const t0 = Date.now();
        setTimeout(() => ac.abort('enough'), 500);
        let threw = false;
        try {
            await c.callTool({ name: `${NS}_${n}`, arguments: a }, { signal: ac.signal, onprogress: () => {} });
        } catch {
            threw = true;
        }
        const ms = Date.now() - t0;
        if (!threw || ms > 5000) throw new Error(`abort: threw=${threw} after ${ms} ms`);
        // The front and the backend connection still serve.
        const [e, ea, et] = SPEC.echo;
        const r = await c.callTool({ name: `${NS}_${e}`, arguments: ea });
        if (!text(r).includes(et)) throw new Error(`after cancel: ${JSON.stringify(r)}`);
        ok(`cancel of ${NS}_${n} after ${ms} ms, the backend still answers`);
    });
}
if (SPEC.complete) {
    await step('complete', async () => {
        for (const [kind, name, arg, value, context, values] of SPEC.complete) {
            const ref =
                kind === 'prompt'
                    ? { type: 'ref/prompt', name: `${NS}_${name}` }
                    : { type: 'ref/resource', uri: name.replace('{NS}', NS) };
            const params = { ref, argument: { name: arg, value } };
            if (context) params.context = { arguments: context };
            const r = await c.complete(params);
            const got = r?.completion?.values ?? [];
            if (JSON.stringify(got) !== JSON.stringify(values)) {
                throw new Error(`${JSON.stringify(ref)} ${arg}=${JSON.stringify(value)}: ${JSON.stringify(r)}`);
            }
            ok(`complete ${ref.name ?? ref.uri} ${arg}=${JSON.stringify(value)}${context ? ` (context ${JSON.stringify(context)})` : ''}: ${JSON.stringify(got)}`);
        }
    });
}
if (SPEC.elicit && only.includes('elicit')) {
    await step('elicit', async () => {
        const [n, a, t] = SPEC.elicit;
        ELICITED.length = 0;
        const r = await c.callTool({ name: `${NS}_${n}`, arguments: a });
        if (r.isError || !text(r).includes(t) || ELICITED.length !== 1) {
            throw new Error(`asked ${ELICITED.length} times; ${JSON.stringify(r).slice(0, 300)}`);
        }
        const how = WANT === '2026-07-28' ? 'an input_required round' : 'a server request';
        ok(`elicit: ${NS}_${n} asked the client (${how}: "${ELICITED[0]}"), answered "${t}"`);
    });
}
await client.close().catch(() => {});
process.exit(failed ? 1 : 0);
