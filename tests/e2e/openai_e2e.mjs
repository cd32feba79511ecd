// End-to-end: `longread-cli serve` with the bundled model, driven by the real openai npm
// package and by curl. Every endpoint, streaming against non-streaming at temperature 0,
// parallel streams, stop sequences, errors, an aborted stream and a reused connection.
//   node openai_e2e.mjs /path/to/longread-cli
// run_e2e.sh (ctest's test_e2e_openai) installs the pinned openai package beside a copy of this
// file. Node 18 is enough: no feature newer than Node 18 is used. Exits 1 when a check fails;
// the servers get SIGTERM whatever happens.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import process from 'node:process';
import OpenAI, { APIUserAbortError, AuthenticationError, BadRequestError } from 'openai';

const cli = process.argv[2];
if (!cli) {
  console.error('usage: node openai_e2e.mjs /path/to/longread-cli');
  process.exit(2);
}

const MODEL = 'bundled:stories260K';  // the bundled model's id (no -m)
const CONTEXT = 256;                   // -c: a prompt over it is refused
const KEY = 'e2e-secret-key';
const servers = [];

// Ends a hung run before ctest's timeout would kill this process and leave the servers running.
const watchdog = setTimeout(() => {
  console.log('FAILED  the checks took over 150 s');
  for (const s of servers) if (s.exit === null) s.proc.kill('SIGKILL');
  process.exit(1);
}, 150_000);
watchdog.unref();

// ---- servers -------------------------------------------------------------------------------

// A port the system just handed out (and took back) is free; startServer retries if it is taken.
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Starts `longread-cli serve` and waits until GET /health answers; { url, proc, log }.
async function startServer(extraArgs) {
  for (let attempt = 1; ; ++attempt) {
    const port = await freePort();
    // NOTE: --backend cpu: the checks compare texts token for token, and a GPU's batched
    // kernels may round differently from its one-sequence ones.
    const args = ['serve', '--port', String(port), '--backend', 'cpu', '-c', String(CONTEXT), ...extraArgs];
    const proc = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const server = { url: `http://127.0.0.1:${port}`, proc, log: '', exit: null };
    server.exited = new Promise((resolve) => proc.on('close', (code, signal) => resolve((server.exit = { code, signal }))));
    proc.on('error', (e) => {
      server.log += `cannot run ${cli}: ${e.message}\n`;
      server.exit ??= { code: null, signal: null };
    });
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (text) => { server.log += text; });
    servers.push(server);
    const deadline = Date.now() + 30_000;
    while (server.exit === null && Date.now() < deadline) {
      try {
        const r = await fetch(`${server.url}/health`);
        if (r.status === 200) return server;
      } catch { /* not listening yet */ }
      await sleep(50);
    }
    if (server.exit !== null && server.log.includes('cannot listen') && attempt < 5) {
      servers.splice(servers.indexOf(server), 1);  // the port was taken meanwhile
      continue;
    }
    throw new Error(`longread-cli ${args.join(' ')} did not become healthy (exit ${JSON.stringify(server.exit)}):\n${server.log}`);
  }
}

// SIGTERM, then SIGKILL after 10 s; the exit status.
async function stopServer(server) {
  if (server.exit === null) {
    server.proc.kill('SIGTERM');
    const timer = setTimeout(() => server.proc.kill('SIGKILL'), 10_000);
    await server.exited;
    clearTimeout(timer);
  }
  return server.exit;
}

process.on('exit', () => {
  for (const s of servers) if (s.exit === null) s.proc.kill('SIGKILL');
});

// ---- curl ----------------------------------------------------------------------------------

// curl's body and status: { status, body }. Extra arguments go before the URL.
function curl(url, ...args) {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '--max-time', '60', '-w', '\n%{http_code}', ...args, url], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`curl ${url} failed: ${stderr || err.message}`));
      const cut = stdout.lastIndexOf('\n');
      resolve({ status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
    });
  });
}

// ---- metrics -------------------------------------------------------------------------------

// Prometheus text: every sample line `name{labels} value`, names starting with longread_,
// each name declared by a # TYPE line. A Map from `name{labels}` to the value.
function parseMetrics(text) {
  const samples = new Map();
  const typed = new Set();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) /.exec(line);
      assert.ok(m, `a comment that is neither HELP nor TYPE: ${line}`);
      if (m[1] === 'TYPE') typed.add(m[2]);
      continue;
    }
    const m = /^(longread_[a-zA-Z0-9_]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? (\S+)$/.exec(line);
    assert.ok(m, `not a longread_ sample line: ${JSON.stringify(line)}`);
    const value = Number(m[3]);
    assert.ok(Number.isFinite(value) || m[3] === '+Inf', `not a number in: ${line}`);
    const family = m[1].replace(/_(bucket|sum|count)$/, '');
    assert.ok(typed.has(m[1]) || typed.has(family), `no # TYPE line before ${m[1]}`);
    assert.ok(!samples.has(m[1] + (m[2] ?? '')), `a sample given twice: ${line}`);
    samples.set(m[1] + (m[2] ?? ''), value);
  }
  return samples;
}

async function metrics(server) {
  const r = await curl(`${server.url}/metrics`);
  assert.equal(r.status, 200);
  return parseMetrics(r.body);
}

// ---- checks --------------------------------------------------------------------------------

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

let main;     // --parallel 4, no key
let keyed;    // --api-key KEY
let client;   // the openai SDK on main, maxRetries 0 so that no failure is retried away

const chat = (content, max_tokens, extra = {}) =>
  ({ model: MODEL, messages: [{ role: 'user', content }], temperature: 0, max_tokens, ...extra });
const completion = (prompt, max_tokens, extra = {}) => ({ model: MODEL, prompt, temperature: 0, max_tokens, ...extra });

// A stream's chunks and its text (chat deltas or completion texts).
async function collect(stream) {
  const chunks = [];
  let text = '';
  for await (const chunk of stream) {
    chunks.push(chunk);
    const choice = chunk.choices[0];
    if (choice) text += choice.delta ? (choice.delta.content ?? '') : choice.text;
  }
  return { chunks, text };
}

// Non-streaming replies that later checks compare with.
const references = {};
const reference = (name) => {
  assert.ok(references[name], `needs the ${name} reply of an earlier check, which failed`);
  return references[name];
};

check('GET /health (curl, no key needed on the keyed server)', async () => {
  for (const server of [main, keyed]) {
    const r = await curl(`${server.url}/health`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { status: 'ok' });
  }
});

check('GET /v1/models', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0].id, MODEL);
  assert.equal(models[0].object, 'model');
  assert.equal(typeof models[0].created, 'number');
  assert.equal(models[0].owned_by, 'longread');
});

check('logprobs: chat and completions, streaming and not', async () => {
  const r = await client.chat.completions.create(chat('Once upon a time', 8, { logprobs: true, top_logprobs: 2 }));
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
    assert.equal(t.top_logprobs[0].token, t.token);  // greedy
    assert.deepEqual(t.bytes, [...Buffer.from(t.token)]);
  }
  const s = await collect(await client.chat.completions.create(chat('Once upon a time', 8, { logprobs: true, stream: true })));
  const streamed = s.chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
  assert.deepEqual(streamed.map((t) => t.logprob), content.map((t) => t.logprob));
  const c = await client.completions.create(completion('Once upon a time', 6, { logprobs: 3 }));
  const lp = c.choices[0].logprobs;
  assert.equal(lp.tokens.join(''), c.choices[0].text);
  assert.equal(lp.token_logprobs.length, 6);
  assert.equal(Object.keys(lp.top_logprobs[0]).length, 3);
  assert.equal(lp.text_offset[0], 0);
});

check('what the server cannot do is a 400 naming the field', async () => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
  await assert.rejects(client.chat.completions.create(chat('hi', 4, { tools })), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'tools');
    return true;
  });
  await assert.rejects(client.chat.completions.create(chat('hi', 4, { response_format: { type: 'json_object' } })), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'response_format');
    return true;
  });
});

check('POST /v1/chat/completions', async () => {
  const r = await client.chat.completions.create(chat('Once upon a time', 40));
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.choices[0].message.content.length > 20, r.choices[0].message.content);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 40);
  assert.ok(r.usage.prompt_tokens > 4);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  // Greedy is greedy: the same request, the same reply.
  const again = await client.chat.completions.create(chat('Once upon a time', 40));
  assert.equal(again.choices[0].message.content, r.choices[0].message.content);
  references.chat = r;
});

check('chat streaming = non-streaming, with a final usage chunk', async () => {
  const ref = reference('chat');
  const { chunks, text } = await collect(
    await client.chat.completions.create(chat('Once upon a time', 40, { stream: true, stream_options: { include_usage: true } })));
  assert.equal(text, ref.choices[0].message.content);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
  }
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, ref.usage);
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
  assert.ok(chunks.slice(0, -2).every((c) => c.choices[0].finish_reason === null && !c.usage));
  // Without include_usage, no usage chunk.
  const plain = await collect(await client.chat.completions.create(chat('Once upon a time', 40, { stream: true })));
  assert.equal(plain.text, ref.choices[0].message.content);
  assert.ok(plain.chunks.every((c) => c.choices.length === 1 && !c.usage));
  // The SDK's own accumulator agrees.
  const final = await client.chat.completions.stream(chat('Once upon a time', 40)).finalChatCompletion();
  assert.equal(final.choices[0].message.content, ref.choices[0].message.content);
  assert.equal(final.choices[0].finish_reason, 'length');
});

check('chat streaming with curl: SSE lines end with data: [DONE]', async () => {
  const body = JSON.stringify(chat('Once upon a time', 40, { stream: true }));
  const r = await curl(`${main.url}/v1/chat/completions`, '-N', '-H', 'Content-Type: application/json', '--data-binary', body);
  assert.equal(r.status, 200);
  const events = r.body.split('\n\n').filter((e) => e !== '' && !e.startsWith(':'));
  assert.equal(events.at(-1), 'data: [DONE]');
  let text = '';
  for (const e of events.slice(0, -1)) {
    assert.ok(e.startsWith('data: '), e);
    text += JSON.parse(e.slice(6)).choices[0].delta.content ?? '';
  }
  assert.equal(text, reference('chat').choices[0].message.content);
});

check('POST /v1/completions, streaming = non-streaming', async () => {
  const r = await client.completions.create(completion('Once upon a time', 30));
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 30);
  assert.ok(r.choices[0].text.length > 20, r.choices[0].text);
  const { chunks, text } = await collect(
    await client.completions.create(completion('Once upon a time', 30, { stream: true, stream_options: { include_usage: true } })));
  assert.equal(text, r.choices[0].text);
  assert.ok(chunks.every((c) => c.object === 'text_completion'));
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.deepEqual(chunks.at(-1).usage, r.usage);
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
  // The default length of a text completion is OpenAI's 16 tokens.
  const short = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', temperature: 0 });
  assert.equal(short.usage.completion_tokens, 16);
  assert.ok(r.choices[0].text.startsWith(short.choices[0].text));
  references.completion = r;
});

check('4 parallel streams = their sequential results', async () => {
  const prompts = ['Once upon a time', 'The little dog', 'Lily and Tom went', 'One day, a bird'];
  const alone = [];
  for (const p of prompts) alone.push((await client.chat.completions.create(chat(p, 200))).choices[0].message.content);
  assert.equal(new Set(alone).size, prompts.length, 'the prompts should give different replies');
  const start = Date.now();
  const together = await Promise.all(prompts.map(async (p) => {
    const stream = await client.chat.completions.create(chat(p, 200, { stream: true }));
    const admitted = Date.now() - start;  // the server answers once the engine admits the request
    const { text } = await collect(stream);
    return { text, admitted, end: Date.now() - start };
  }));
  together.forEach((t, i) => assert.equal(t.text, alone[i], `stream ${i} (${prompts[i]})`));
  // They ran at once: every one was admitted before any ended (with --parallel 1 the
  // later ones wait for the earlier ones to end).
  const lastAdmitted = Math.max(...together.map((t) => t.admitted));
  const firstEnd = Math.min(...together.map((t) => t.end));
  assert.ok(lastAdmitted < firstEnd, `not at once: one admitted at ${lastAdmitted} ms, one ended at ${firstEnd} ms`);
  return `all admitted by ${lastAdmitted} ms, the first ended at ${firstEnd} ms`;
});

check('stop sequences: a string and an array', async () => {
  const full = reference('completion').choices[0].text;
  const cut = full.indexOf(' ', Math.floor(full.length / 2));
  assert.ok(cut > 0, full);
  const stop = full.slice(cut, cut + 4);
  const expected = full.slice(0, full.indexOf(stop));
  for (const stops of [stop, ['never there', stop]]) {
    const r = await client.completions.create(completion('Once upon a time', 30, { stop: stops }));
    assert.equal(r.choices[0].text, expected, `stop ${JSON.stringify(stops)}`);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const s = await collect(await client.completions.create(completion('Once upon a time', 30, { stop: stops, stream: true })));
    assert.equal(s.text, expected);
    assert.equal(s.chunks.at(-1).choices[0].finish_reason, 'stop');
  }
  // Chat too, an array whose first string never comes.
  const text = reference('chat').choices[0].message.content;
  const at = text.indexOf(' ', Math.floor(text.length / 2));
  assert.ok(at > 0, text);
  const word = text.slice(at, at + 5);
  const r = await client.chat.completions.create(chat('Once upon a time', 40, { stop: ['zzz', word] }));
  assert.equal(r.choices[0].message.content, text.slice(0, text.indexOf(word)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

check('a prompt over -c is a 400 context_length_exceeded', async () => {
  const longer = 'Once upon a time there was a cat. '.repeat(100);
  const expectations = (e) => {
    assert.ok(e instanceof BadRequestError, `got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    assert.equal(e.type, 'invalid_request_error');
    assert.match(e.message, /maximum context length/);
    return true;
  };
  await assert.rejects(client.chat.completions.create(chat(longer, 4)), expectations);
  await assert.rejects(client.chat.completions.create(chat(longer, 4, { stream: true })), expectations);
  await assert.rejects(client.completions.create(completion(longer, 4)), expectations);
  // The context itself is not too small: a short prompt still runs.
  assert.equal((await client.completions.create(completion('Once upon a time', 4))).usage.completion_tokens, 4);
});

check('malformed JSON (curl) is an OpenAI-style 400', async () => {
  for (const [path, body] of [['/v1/chat/completions', '{"messages": ['], ['/v1/completions', '{"prompt": "x",}'], ['/v1/chat/completions', '[1, 2]']]) {
    const r = await curl(`${main.url}${path}`, '-H', 'Content-Type: application/json', '--data-binary', body);
    assert.equal(r.status, 400, `${path} ${body}`);
    const parsed = JSON.parse(r.body);
    assert.deepEqual(Object.keys(parsed), ['error']);
    const e = parsed.error;
    assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(typeof e.message, 'string');
    assert.ok(e.message.length > 10);
    assert.equal(e.type, 'invalid_request_error');
    assert.ok(e.param === null || typeof e.param === 'string');
    assert.ok(e.code === null || typeof e.code === 'string');
  }
  // A bad field through the SDK: a 400 that names it.
  await assert.rejects(client.chat.completions.create(chat('hi', 4, { temperature: 7 })), (e) => {
    assert.ok(e instanceof BadRequestError);
    assert.equal(e.param, 'temperature');
    return true;
  });
});

check('a wrong API key is a 401 AuthenticationError', async () => {
  for (const apiKey of ['wrong', `${KEY}x`, 'e2e']) {
    const wrong = new OpenAI({ apiKey, baseURL: `${keyed.url}/v1`, maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => {
      assert.ok(e instanceof AuthenticationError, `got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 401);
      assert.equal(e.code, 'invalid_api_key');
      return true;
    });
  }
  const wrong = new OpenAI({ apiKey: 'wrong', baseURL: `${keyed.url}/v1`, maxRetries: 0 });
  await assert.rejects(wrong.chat.completions.create(chat('hi', 2)), AuthenticationError);
  const none = await curl(`${keyed.url}/v1/models`);
  assert.equal(none.status, 401);
  assert.equal(JSON.parse(none.body).error.type, 'authentication_error');
  // The right key is let in.
  const right = new OpenAI({ apiKey: KEY, baseURL: `${keyed.url}/v1`, maxRetries: 0 });
  const r = await right.chat.completions.create(chat('Once upon a time', 40));
  assert.equal(r.choices[0].message.content, reference('chat').choices[0].message.content);
});

check('a stream aborted mid-way stops its generation; the server stays healthy', async () => {
  // Without the abort this reply would not end (no token limit, a policy that never fills).
  const stream = await client.chat.completions.create(
    chat('Once upon a time', 1 << 24, { stream: true, longread: { kv_policy: 'streaming' } }));
  let chunks = 0;
  let afterAbort = 0;
  try {
    for await (const chunk of stream) {
      if (stream.controller.signal.aborted && ++afterAbort > 200) break;
      if (chunk.choices[0]?.delta.content && ++chunks === 5) stream.controller.abort();
    }
  } catch (e) {
    if (!(e instanceof APIUserAbortError) && e?.name !== 'AbortError') throw e;
  }
  assert.equal(chunks >= 5, true, `only ${chunks} chunks before the stream ended`);
  // What the SDK had already read may still come out, then the loop ends.
  assert.ok(afterAbort <= 200, 'the stream went on after the abort');
  // The sequence ends at its next failed write: nothing runs a moment later.
  let running;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(50)) {
    running = (await metrics(main)).get('longread_sequences_running');
    if (running === 0) break;
  }
  assert.equal(running, 0, 'the aborted stream is still generating');
  assert.equal((await curl(`${main.url}/health`)).status, 200);
  const r = await client.chat.completions.create(chat('Once upon a time', 40));
  assert.equal(r.choices[0].message.content, reference('chat').choices[0].message.content);
});

check('keep-alive: a request right after a finished stream (maxRetries 0)', async () => {
  for (let round = 0; round < 3; ++round) {
    const s = await collect(await client.chat.completions.create(chat('Once upon a time', 40, { stream: true })));
    assert.equal(s.text, reference('chat').choices[0].message.content);
    const r = await client.chat.completions.create(chat('Once upon a time', 40));
    assert.equal(r.choices[0].message.content, reference('chat').choices[0].message.content);
    const c = await client.completions.create(completion('Once upon a time', 30));
    assert.equal(c.choices[0].text, reference('completion').choices[0].text);
  }
});

check('GET /metrics: counters move with requests', async () => {
  const before = await metrics(main);
  assert.ok(before.size > 40, `only ${before.size} samples`);
  const chat200 = 'longread_requests_total{endpoint="/v1/chat/completions",status="200"}';
  const chat400 = 'longread_requests_total{endpoint="/v1/chat/completions",status="400"}';
  const text200 = 'longread_requests_total{endpoint="/v1/completions",status="200"}';
  assert.ok(before.get(chat200) >= 10);
  assert.ok(before.get(chat400) >= 2);
  assert.equal(before.get('longread_sequences_running'), 0);
  assert.equal(before.get('longread_sequences_queued'), 0);
  assert.equal(before.get('longread_kv_bytes_used{tier="device"}'), 0);
  assert.ok(before.get('longread_kv_bytes_capacity{tier="device"}') > 0);

  const a = await client.chat.completions.create(chat('The little dog', 5));
  const b = await client.completions.create(completion('The little dog', 7));
  await assert.rejects(client.chat.completions.create(chat('hi', 4, { top_p: 3 })), BadRequestError);
  // The request counter is bumped after the reply is sent: wait for it.
  let after;
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(50)) {
    after = await metrics(main);
    if (after.get(chat400) > before.get(chat400) && after.get(chat200) > before.get(chat200) && after.get(text200) > before.get(text200)) break;
  }
  const delta = (name) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
  assert.equal(delta(chat200), 1);
  assert.equal(delta(text200), 1);
  assert.equal(delta(chat400), 1);
  assert.equal(a.usage.completion_tokens + b.usage.completion_tokens, 12);
  assert.equal(delta('longread_generated_tokens_total'), 12);
  assert.equal(delta('longread_prompt_tokens_total'), a.usage.prompt_tokens + b.usage.prompt_tokens);
  assert.equal(delta('longread_time_to_first_token_seconds_count'), 2);
  assert.equal(delta('longread_inter_token_latency_seconds_count'), 4 + 6);
  assert.ok(delta('longread_requests_total{endpoint="/metrics",status="200"}') >= 1);
});

// ---- run -----------------------------------------------------------------------------------

let failed = 0;
let passed = 0;
const t0 = Date.now();
try {
  [main, keyed] = await Promise.all([startServer(['--parallel', '4']), startServer(['--parallel', '1', '--api-key', KEY])]);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${main.url}/v1`, maxRetries: 0, timeout: 60_000 });
  console.log(`servers up in ${Date.now() - t0} ms: ${main.url} (--parallel 4), ${keyed.url} (--api-key)`);
  for (const { name, fn } of checks) {
    const t = Date.now();
    try {
      const note = await fn();
      ++passed;
      console.log(`ok      ${name} (${Date.now() - t} ms)${note ? `: ${note}` : ''}`);
    } catch (e) {
      ++failed;
      console.log(`FAILED  ${name} (${Date.now() - t} ms)\n${e?.stack ?? e}`);
    }
  }
} catch (e) {
  ++failed;
  console.log(`FAILED  starting the servers\n${e?.stack ?? e}`);
}
for (const s of servers) {
  const running = s.exit === null;
  const t = Date.now();
  const exit = await stopServer(s);
  // (httplib's stop waits for the SDK's idle keep-alive connection to close: a few seconds)
  if (running) console.log(`stopped ${s.url} in ${Date.now() - t} ms`);
  if (!running || exit.code !== 0) {
    ++failed;
    console.log(`FAILED  the server on ${s.url} ${running ? 'exited on SIGTERM' : 'had stopped by itself'}: ${JSON.stringify(exit)}`);
  }
}
if (failed) for (const s of servers) console.log(`--- stderr of the server on ${s.url} ---\n${s.log}`);
console.log(`${passed} of ${checks.length} checks passed, ${failed} failure(s), ${Date.now() - t0} ms`);
process.exit(failed || passed !== checks.length ? 1 : 0);
