// The official TypeScript SDK v2 server (@modelcontextprotocol/server, pinned in
// package.json) on 127.0.0.1: one factory serves 2026-07-28 and, through the SDK's
// stateless legacy fallback, the 2025 era. For interop/client/run.sh.
//
//   node ts_server.mjs PORT      Streamable HTTP on 127.0.0.1:PORT
//   node ts_server.mjs stdio     newline-delimited JSON-RPC on stdin/stdout
import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

function factory() {
  const server = new McpServer({ name: 'ts-sdk-v2-interop', version: '2.4.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] })
  );
  server.registerTool(
    'repeat',
    { description: 'Repeats its text', inputSchema: z.object({ text: z.string(), times: z.number().int() }) },
    async ({ text, times }) => ({ content: [{ type: 'text', text: text.repeat(times) }] })
  );
  server.registerResource('greeting', 'note://greeting', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'hello from TypeScript' }]
  }));
  server.registerPrompt(
    'greet',
    { description: 'Greets someone', argsSchema: z.object({ who: z.string() }) },
    ({ who }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${who}!` } }] })
  );
  return server;
}

if (process.argv[2] === 'stdio') {
  serveStdio(factory);
} else {
  serveHttp(Number(process.argv[2] ?? 0));
}

function serveHttp(port) {
const handler = createMcpHandler(factory);

const server = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (e) {
    console.error('ts_server:', e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(port, '127.0.0.1', () => {
  console.log(`ts-sdk-v2 server on http://127.0.0.1:${server.address().port}/mcp`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
