/* web.js — make bench-web: the page's speed in headless Chromium (the same
   browser and flags as make test-web, driven by tests/web/run.js's pieces).
   1. GEMM 512x512x512 in the page built with wasm SIMD against the page
      built without it (the portable kernels alone): GFLOP/s.
   2. Each lesson's script time in the page (-q, the interpreter's main from
      call to return) against the native `./tensortrace -q` wall time, on
      all cores and on one (TT_NUM_THREADS=1). The page is run once its
      spare worker has touched its heap, as after a reader's pause.
   Rounds are interleaved (SIMD, portable, native in turn) after one warm-up
   round; medians of RUNS rounds (3 RUNS for GEMM), with the spread (min-max).
   Usage: node --experimental-websocket tests/bench/web.js WEB_DIR PORTABLE_DIR [RUNS] */
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { launch, newPage, quit, pick, edit, RUN, tmp } = require('../web/run.js');

const root = path.resolve(__dirname, '../..');
const [simdDir, portableDir] = [process.argv[2] || 'build/web', process.argv[3] || 'build/web-portable'].map(d => path.resolve(root, d));
const runs = Math.max(1, +process.argv[4] || 9);   // a 20 ms lesson spreads 2x from run to run: 5 rounds are too few
const only = process.env.TT_WEB_ONLY || '';   // lessons whose name starts so, as in make test-web

const median = xs => { const s = xs.slice().sort((a, b) => a - b), n = s.length; return n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const spread = (xs, f) => f(Math.min(...xs)) + '-' + f(Math.max(...xs));

/* one matmul to warm up, then the median of five, as GFLOP/s */
const GEMM = `tt.trace.off()
tt.manual_seed(1)
local a, b = tt.randn(512, 512), tt.randn(512, 512)
a:matmul(b)
local t = {}
for i = 1, 5 do local t0 = tt.clock(); a:matmul(b); t[i] = tt.clock() - t0 end
table.sort(t)
print(string.format("gflops %.4f", 2 * 512^3 / t[3] / 1e9))
`;

async function openPage(b, dir) {
  const rec = { requests: [], errors: [], loaded: 0 };
  const page = await newPage(b, rec);
  await page.size(1280, 900);
  await page.goto('file://' + dir + '/index.html');
  if (await page.eval('typeof tt_page') !== 'object') throw new Error(dir + ': the page did not start: ' + rec.errors.join('; '));
  await page.eval(`localStorage.clear(), document.getElementById('quiet').checked = true`);
  return page;
}
async function gemm(page) {
  await page.eval(pick('03_causal_mask'));
  const r = await page.eval(edit(GEMM) + ', ' + RUN);
  const m = /gflops ([\d.]+)/.exec(r.stdout);
  if (r.rc !== 0 || !m) throw new Error('the GEMM script failed: ' + r.stdout + r.stderr);
  return +m[1];
}
async function lessonInPage(page, name) {
  if (await page.eval(pick(name)) !== name) throw new Error(name + ': not in the picker');
  // Run as a reader does, after a pause: once the spare worker has touched its heap
  for (let t = 0; t < 200 && !(await page.eval('tt_page.warm()')); t++) await new Promise(r => setTimeout(r, 100));
  const r = await page.eval(RUN);
  if (r.rc !== 0) throw new Error(name + ': failed in the page: ' + r.stderr.slice(0, 300));
  return r.ms / 1000;
}
function lessonNative(name, threads) {
  const env = Object.assign({}, process.env, threads ? { TT_NUM_THREADS: String(threads) } : {});
  const t0 = process.hrtime.bigint();
  execFileSync(path.join(root, 'tensortrace'), ['-q', 'lessons/' + name + '.lua'], { cwd: root, stdio: 'ignore', env });
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function main() {
  const lessons = fs.readdirSync(path.join(root, 'lessons')).filter(n => /^\d\d_.*\.lua$/.test(n) && n.startsWith(only))
    .map(n => n.slice(0, -4)).sort();
  const b = await launch();
  const simd = await openPage(b, simdDir), portable = await openPage(b, portableDir);
  const g = { simd: [], portable: [] }, gemmRuns = 3 * runs;   // (a GEMM run is short: more of them)
  for (let i = 0; i <= gemmRuns; i++) {   // round 0 is the warm-up
    const s = await gemm(simd), p = await gemm(portable);
    if (i) { g.simd.push(s); g.portable.push(p); }
  }
  const gs = median(g.simd), gp = median(g.portable);
  console.log(`GEMM 512^3 in the page, GFLOP/s (median of ${gemmRuns}, min-max):`);
  console.log(`  wasm SIMD ${gs.toFixed(2)} (${spread(g.simd, x => x.toFixed(2))})  portable ${gp.toFixed(2)} (${spread(g.portable, x => x.toFixed(2))})  ratio ${(gs / gp).toFixed(2)}x (target >= 3)`);
  console.log(`\n| lesson | page s (min-max) | native s (min-max) | page/native | native 1 thread s | page/1 thread |\n|---|---|---|---|---|---|`);
  let over = 0;
  for (const name of lessons) {
    const pg = [], nat = [], one = [];
    for (let i = 0; i <= runs; i++) {
      const p = await lessonInPage(simd, name), n = lessonNative(name), n1 = lessonNative(name, 1);
      if (i) { pg.push(p); nat.push(n); one.push(n1); }
    }
    const mp = median(pg), mn = median(nat), m1 = median(one), ratio = mp / mn;
    if (ratio > 2.5) over++;
    console.log(`| ${name} | ${mp.toFixed(3)} (${spread(pg, x => x.toFixed(3))}) | ${mn.toFixed(3)} (${spread(nat, x => x.toFixed(3))}) | ${ratio.toFixed(2)}${ratio > 2.5 ? ' (over 2.5)' : ''} | ${m1.toFixed(3)} | ${(mp / m1).toFixed(2)} |`);
  }
  console.log(`\n${lessons.length} lessons, ${over} over 2.5x native; ${runs} rounds after a warm-up; load ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  console.log('The page runs on one thread, native on all cores (TT_NUM_THREADS=1: the last two columns). Each page');
  console.log('run starts once the spare worker has touched its heap, as after a reader\'s pause (lua/web/page.js).');
}

main().catch(e => { console.log('bench-web stopped: ' + e.stack); process.exitCode = 1; }).finally(() => {
  quit();
  fs.rmSync(tmp, { recursive: true, force: true });
});
