#!/usr/bin/env node
// Drives a 2026-07-28 `snodo gateway` mounting server-everything (namespace ev) with the
// official TypeScript client (@modelcontextprotocol/client 2.4.0): a listen stream
// watching a backend resource under its front URI hears the backend's update; the
// backend's task tool (simulate-research-query, taskSupport "required") answers in one
// call. One line per check, "ok ..." or "FAIL ...", exit 1 on any failure.
//
//   node listen.mjs URL
const [url] = process.argv.slice(2);
const REQ = { timeout: 30000 };
let failed = 0;
const ok = m => console.log(`ok   listen@ev x 2026-07-28: ${m}`);
const fail = m => {
    failed++;
    console.log(`FAIL listen@ev x 2026-07-28: ${m}`);
};
const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
const client = new Client({ name: 'compose-listen', version: '0.1.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)), REQ);
try {
    const r = await client.callTool({ name: 'ev_simulate-research-query', arguments: { topic: 'otters' } }, REQ);
    const text = r.content?.[0]?.text ?? '';
    text.includes('Research Report: otters') ? ok('a backend task tool answers in one call') : fail(`research: ${text.slice(0, 200)}`);
} catch (e) {
    fail(`research: ${e}`);
}
const uri = 'demo://ev/resource/dynamic/text/1';
const updates = [];
client.setNotificationHandler('notifications/resources/updated', n => updates.push(n.params?.uri));
let sub;
try {
    sub = await client.listen({ resourceSubscriptions: [uri] }, REQ);
    const honored = sub.honoredFilter?.resourceSubscriptions ?? [];
    honored.includes(uri) ? ok('the listen stream watches the front URI') : fail(`honored: ${JSON.stringify(sub.honoredFilter)}`);
    // Toggled on, server-everything sends at once (then every 5 s) for the URIs its
    // connection subscribed to: the gateway subscribed when the stream opened.
    const until = Date.now() + 20000;
    let on = false;
    while (!updates.includes(uri) && Date.now() < until) {
        await client.callTool({ name: 'ev_toggle-subscriber-updates', arguments: {} }, REQ);
        on = !on;
        await new Promise(r => setTimeout(r, on ? 1500 : 100));
    }
    updates.includes(uri) ? ok('a backend resource update reached the listen stream') : fail(`no update for ${uri}: ${JSON.stringify(updates)}`);
} catch (e) {
    fail(`listen: ${e}`);
}
await sub?.close?.();
await client.close();
process.exit(failed ? 1 : 0);
