// Judge one lane's runner output, scenario by scenario.
//
//   node evaluate.mjs RAWDIR SCENARIOS_FILE BASELINE_FILE [RUNNER_LOG]
//
// RAWDIR          the runner's -o directory: server-<scenario>-<timestamp>/checks.json
// SCENARIOS_FILE  one scenario name per line: exactly the scenarios that are judged
// BASELINE_FILE   expected failures in the runner's format (server: [scenario | scenario:check-id]),
//                 every entry with a "# reason" comment on its own line
// RUNNER_LOG      optional: the runner's console output, to explain missing checks.json
//
// EVALUATE_MODE=client judges a `conformance client` run instead: the baseline key is
// `client`, and results are <scenario>-<timestamp>/checks.json (auth/<name>-... nested).
//
// Rules (the runner's --expected-failures semantics, see README.md):
//   - a check is bad if FAILURE; once the baseline is non-empty, WARNING is bad too;
//   - unlisted scenario: any bad check -> FAIL;
//   - "scenario" entry: some bad check -> XFAIL, none -> FAIL (stale baseline entry);
//   - "scenario:check-id" entry: checks collapsed per id, most severe wins; a bad id
//     not listed -> FAIL; a listed id that is SUCCESS -> FAIL (stale); a listed id that
//     is absent or SKIPPED is tolerated; otherwise XFAIL if a listed id is bad;
//   - no checks.json for a scenario -> FAIL.
// XFAIL counts as passed. Last line: "N passed, M failed". Exit 0 iff M == 0, 2 on a bad
// baseline file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [rawDir, scenariosFile, baselineFile, runnerLog] = process.argv.slice(2);
if (!rawDir || !scenariosFile || !baselineFile) {
  console.error('usage: node evaluate.mjs RAWDIR SCENARIOS_FILE BASELINE_FILE');
  process.exit(2);
}
// `yaml` is a dependency of the runner, so it is in ../node_modules.
const YAML = createRequire(new URL('../package.json', import.meta.url))('yaml');

function die(msg) {
  console.error(`evaluate: ${baselineFile}: ${msg}`);
  process.exit(2);
}

// ---- baseline ------------------------------------------------------------------
const text = readFileSync(baselineFile, 'utf8');
let doc;
try {
  doc = YAML.parse(text) ?? {};
} catch (e) {
  die(e.message);
}
const mode = process.env.EVALUATE_MODE === 'client' ? 'client' : 'server';
if (typeof doc !== 'object' || Array.isArray(doc)) die(`expected a mapping with a '${mode}' key`);
const list = doc[mode] ?? [];
if (!Array.isArray(list)) die(`'${mode}' must be a list`);
// Reasons come from the "# ..." comment on the entry's own line.
const reasons = new Map();
for (const line of text.split('\n')) {
  const m = line.match(/^\s*-\s*(['"]?)([^\s'"#]+)\1\s*#\s*(.*?)\s*$/);
  if (m && m[3]) reasons.set(m[2], m[3]);
}
const wholesale = new Map(); // scenario -> reason
const perCheck = new Map(); // scenario -> Map(checkId -> reason)
for (const entry of list) {
  if (typeof entry !== 'string' || entry === '') {
    die(`entry ${JSON.stringify(entry)} is not 'scenario' or 'scenario:check-id' (no space after the colon)`);
  }
  const reason = reasons.get(entry);
  if (!reason) die(`entry '${entry}' has no '# reason' comment on its line`);
  const i = entry.indexOf(':');
  if (i === -1) {
    wholesale.set(entry, reason);
    continue;
  }
  const [scenario, id] = [entry.slice(0, i), entry.slice(i + 1)];
  if (!scenario || !id) die(`entry '${entry}': both sides of the colon are required`);
  if (!perCheck.has(scenario)) perCheck.set(scenario, new Map());
  perCheck.get(scenario).set(id, reason);
}
for (const s of perCheck.keys()) {
  if (wholesale.has(s)) die(`'${s}' is listed both wholesale and per check; keep one`);
}
const strict = list.length > 0;
const isBad = (c) => c.status === 'FAILURE' || (strict && c.status === 'WARNING');

// ---- checks ---------------------------------------------------------------------
const scenarios = readFileSync(scenariosFile, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);

function loadChecks(scenario) {
  // server-<scenario>-<ISO timestamp with - for :.>; the newest one wins. Client runs:
  // <scenario>-<timestamp>, a scenario "a/b" in the folder a.
  const slash = mode === 'client' ? scenario.lastIndexOf('/') : -1;
  const folder = slash === -1 ? rawDir : join(rawDir, scenario.slice(0, slash));
  const name = (mode === 'server' ? 'server-' : '') + scenario.slice(slash + 1);
  const dirs = existsSync(folder) ? readdirSync(folder) : [];
  const re = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d{4}-\\d\\d-\\d\\dT`);
  for (const d of dirs.filter((d) => re.test(d)).sort().reverse()) {
    try {
      return JSON.parse(readFileSync(join(folder, d, 'checks.json'), 'utf8'));
    } catch {
      /* missing or unreadable: try an older one */
    }
  }
  return undefined;
}

// The runner's collapse: per id the most severe status wins (INFO kept aside).
const rank = (s) => ({ FAILURE: 3, WARNING: 2, SUCCESS: 1 })[s] ?? 0;
function collapse(checks) {
  const byId = new Map();
  for (const c of checks) {
    if (c.status === 'INFO') continue;
    const cur = byId.get(c.id);
    if (!cur || rank(c.status) >= rank(cur.status)) byId.set(c.id, c);
  }
  return byId;
}

// Distinct (status, id, message) lines, "(xN)" for repeats; long messages are cut.
function describe(checks, pred) {
  const seen = new Map();
  for (const c of checks.filter(pred)) {
    const msg = String(c.errorMessage || c.details?.message || c.description || '').trim();
    const key = `${c.status} ${c.id}: ${msg}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const out = [];
  for (const [key, n] of seen) {
    let lines = key.split('\n');
    if (lines.length > 6) lines = [...lines.slice(0, 6), `... (${lines.length - 6} more lines)`];
    lines = lines.map((l) => (l.length > 500 ? `${l.slice(0, 500)}... (${l.length} chars)` : l));
    if (n > 1) lines[0] += ` (x${n})`;
    out.push(`    ${lines[0]}`, ...lines.slice(1).map((l) => `      ${l}`));
  }
  return out;
}

function judge(scenario) {
  const checks = loadChecks(scenario);
  if (!checks) {
    const lines = ['    no checks.json: the scenario crashed or the runner was stopped; see runner.log'];
    // the runner logs "Failed to run scenario NAME: Error: ..." when a scenario throws
    const log = runnerLog && existsSync(runnerLog) ? readFileSync(runnerLog, 'utf8').split('\n') : [];
    const at = log.findIndex((l) => l.startsWith(`Failed to run scenario ${scenario}:`));
    if (at !== -1) lines.push(...log.slice(at, at + 2).filter(Boolean).map((l) => `      ${l.trim()}`));
    return { verdict: 'FAIL', lines };
  }
  const anyBad = checks.some(isBad);
  if (wholesale.has(scenario)) {
    if (anyBad) return { verdict: 'XFAIL', note: wholesale.get(scenario), lines: describe(checks, isBad) };
    return { verdict: 'FAIL', lines: [`    stale baseline entry '${scenario}': the scenario now passes; remove the entry`] };
  }
  const listed = perCheck.get(scenario);
  if (listed) {
    const byId = collapse(checks);
    const unexpected = [...byId.values()].filter((c) => isBad(c) && !listed.has(c.id)).map((c) => c.id);
    const stale = [...listed.keys()].filter((id) => byId.get(id)?.status === 'SUCCESS');
    const expected = [...listed.keys()].filter((id) => byId.has(id) && isBad(byId.get(id)));
    if (unexpected.length || stale.length) {
      return {
        verdict: 'FAIL',
        lines: [
          ...describe(checks, (c) => isBad(c) && unexpected.includes(c.id)),
          ...stale.map((id) => `    stale baseline entry '${scenario}:${id}': the check now passes; remove the entry`),
        ],
      };
    }
    if (expected.length) {
      return {
        verdict: 'XFAIL',
        note: expected.map((id) => (expected.length > 1 ? `${id}: ${listed.get(id)}` : listed.get(id))).join('; '),
        lines: describe(checks, (c) => isBad(c) && expected.includes(c.id)),
      };
    }
    return { verdict: 'PASS', lines: [] };
  }
  if (anyBad) return { verdict: 'FAIL', lines: describe(checks, isBad) };
  // Passing, but show SHOULD-level warnings (they fail once the baseline is non-empty).
  return { verdict: 'PASS', lines: describe(checks, (c) => c.status === 'WARNING') };
}

let passed = 0;
let failed = 0;
for (const scenario of scenarios) {
  const { verdict, note, lines } = judge(scenario);
  console.log(verdict === 'XFAIL' ? `XFAIL ${scenario}  # ${note}` : `${verdict} ${scenario}`);
  for (const l of lines) console.log(l);
  if (verdict === 'FAIL') failed++;
  else passed++;
}
for (const s of [...wholesale.keys(), ...perCheck.keys()]) {
  if (!scenarios.includes(s)) console.log(`note: baseline entry for '${s}' names no scenario of this lane (ignored)`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
