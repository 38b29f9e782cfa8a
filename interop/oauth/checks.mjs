// The tally the OAuth lane's scripts keep: check() prints one PASS or FAIL line per
// expectation; finish() prints "N passed, M failed" (run.sh reads that line) and exits
// 1 if anything failed.

let passed = 0;
let failed = 0;

/** Counts and prints one expectation. */
export function check(name, ok, detail = '') {
  if (ok) {
    passed += 1;
    console.log(`  PASS ${name}`);
  } else {
    failed += 1;
    console.log(`  FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
}

/** Prints the tally (after a titled line when `title` is given) and exits. */
export function finish(title) {
  if (title) console.log(`\n${title}: ${passed} passed, ${failed} failed`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
