/* run.js — make test-web: the page of make web in headless Chromium, driven
   over the DevTools protocol (node's WebSocket; nothing from npm). Each lesson
   is picked and Run as a reader would; its terminal trace must equal the
   native binary's for the same lesson and seed (timings off in both), its
   figures the native PNGs pixel for pixel (pngcmp). Then an edited script,
   an error and its line, a runaway loop stopped by --timeout and by Stop with
   the page still usable, an exercise checked, the state kept across a
   reload and reset, ?lesson=&run=1, the page from a static server, and the
   screenshots at 1280 and 390 px. Every request the page makes is recorded:
   only the page's own files may be asked for; no console error may appear.
   Usage: node --experimental-websocket tests/web/run.js BUILD
   Prints one line per failure, the timings, and "N passed, N failed". */
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const build = process.argv[2] || 'build';
const root = path.resolve(__dirname, '../..');
const web = path.join(root, 'build/web');
const shots = path.join(root, build, 'web-test');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tt-web-'));
let passed = 0, failed = 0;
function ok(cond, what) {
  if (cond) passed++;
  else { failed++; console.log('FAIL ' + what.slice(0, 600)); }
  return cond;
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

/* ===== Chromium and the protocol ===== */
let browser = null;
function quit() {   // Chromium and its helpers, however the test ends
  if (browser && browser.exitCode === null) try { process.kill(-browser.pid, 'SIGKILL'); } catch (e) {}
  browser = null;
}
function chromium() {
  for (const c of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (fs.existsSync(c)) return c;
  throw new Error('chromium not found');
}
async function launch() {
  const profile = fs.mkdtempSync(path.join(tmp, 'profile-'));
  const proc = spawn(chromium(), ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--hide-scrollbars',
    '--allow-file-access-from-files=false', '--user-data-dir=' + profile, '--remote-debugging-port=0', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true });   // its own group: ended whole below
  browser = proc;
  const url = await new Promise((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error('chromium did not start: ' + err.slice(-500))), 30000);
    proc.stderr.on('data', d => {
      err += d;
      const m = err.match(/DevTools listening on (ws:\S+)/);
      if (m) { clearTimeout(t); resolve(m[1]); }
    });
  });
  const ws = new WebSocket(url);
  await new Promise((res, rej) => { ws.onopen = res; ws.onerror = rej; });
  let id = 0;
  const waiting = new Map(), listeners = [];
  ws.onmessage = ev => {
    const m = JSON.parse(ev.data);
    if (m.id && waiting.has(m.id)) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(w.method + ': ' + m.error.message)); else w.resolve(m.result);
    } else if (m.method) listeners.forEach(f => f(m));
  };
  const send = (method, params, sessionId) => new Promise((resolve, reject) => {
    const n = ++id;
    waiting.set(n, { resolve, reject, method });
    ws.send(JSON.stringify({ id: n, method, params: params || {}, sessionId }));
  });
  return { proc, send, listeners, close: () => { try { ws.close(); } catch (e) {} quit(); } };
}

async function newPage(b, record) {
  const { targetId } = await b.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await b.send('Target.attachToTarget', { targetId, flatten: true });
  const s = (m, p) => b.send(m, p, sessionId);
  b.listeners.push(m => {
    if (m.sessionId !== sessionId) return;
    if (m.method === 'Network.requestWillBeSent') record.requests.push(m.params.request.url);
    if (m.method === 'Runtime.exceptionThrown') record.errors.push('exception: ' + JSON.stringify(m.params.exceptionDetails).slice(0, 300));
    if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'warning'))
      record.errors.push('console.' + m.params.type + ': ' + m.params.args.map(a => a.value || a.description).join(' '));
    if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error') record.errors.push('log: ' + m.params.entry.text);
    if (m.method === 'Page.loadEventFired') record.loaded++;
  });
  // Workers are targets of their own: follow them too, so their requests count.
  await s('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  b.listeners.push(m => {
    if (m.method === 'Target.attachedToTarget' && m.sessionId === sessionId) {
      const ws = m.params.sessionId;
      b.listeners.push(e => {
        if (e.sessionId === ws && e.method === 'Network.requestWillBeSent') record.requests.push(e.params.request.url);
        if (e.sessionId === ws && e.method === 'Runtime.exceptionThrown') record.errors.push('worker exception: ' + JSON.stringify(e.params.exceptionDetails).slice(0, 300));
      });
      b.send('Network.enable', {}, ws).catch(() => {});
      b.send('Runtime.enable', {}, ws).catch(() => {});
      b.send('Runtime.runIfWaitingForDebugger', {}, ws).catch(() => {});
    }
  });
  for (const d of ['Page', 'Runtime', 'Network', 'Log']) await s(d + '.enable');
  const page = {
    send: s,
    async eval(expr) {
      const r = await s('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
      if (r.exceptionDetails) throw new Error('in the page: ' + (r.exceptionDetails.exception || {}).description + ' (' + expr.slice(0, 80) + ')');
      return r.result.value;
    },
    async goto(url) {
      const n = record.loaded;
      await s('Page.navigate', { url });
      for (let i = 0; i < 600 && record.loaded === n; i++) await sleep(50);
      await page.eval('new Promise(r => setTimeout(r, 50))');
    },
    async size(w, h) { await s('Emulation.setDeviceMetricsOverride', { width: w, height: h, deviceScaleFactor: 1, mobile: w < 500 }); },
    async shot(file) {
      const r = await s('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
      fs.writeFileSync(file, Buffer.from(r.data, 'base64'));
    }
  };
  return page;
}

/* The page as a reader uses it: pick, (edit,) click Run, wait for the run. */
const RESULT = `(r => ({ rc: r.rc, ms: r.ms, stopped: !!r.stopped, stdout: r.stdout, stderr: r.stderr,
  figures: r.figures.map(f => { let s = ''; for (let i = 0; i < f.bytes.length; i += 8192)
    s += String.fromCharCode.apply(null, f.bytes.subarray(i, i + 8192)); return { name: f.name, b64: btoa(s) }; }),
  status: document.getElementById('status').textContent,
  error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
  mark: document.getElementById('mark').hidden ? 0 : document.getElementById('mark').line,
  verdict: document.getElementById('verdict').hidden ? null : document.getElementById('verdict').textContent }))`;
function pick(name) {
  return `(() => { const s = document.getElementById('lesson'); s.value = ${JSON.stringify(name)};
    s.dispatchEvent(new Event('change')); return s.value; })()`;
}
function edit(text) {
  return `(() => { const t = document.getElementById('src'); t.value = ${JSON.stringify(text)};
    t.dispatchEvent(new Event('input')); })()`;
}
const RUN = `(() => { document.getElementById('run').click(); return tt_page.running().then(${RESULT}); })()`;

/* ===== the native side ===== */
function native(lesson, dir) {
  fs.mkdirSync(dir, { recursive: true });
  /* the native run writes to --images dir and its Figure lines name dir's
     files (tt.figure_path); the page writes to its own images/ */
  return execFileSync(path.join(root, 'tensortrace'), ['--images', dir, 'lessons/' + lesson + '.lua'],
    { cwd: root, env: Object.assign({}, process.env, { TT_TRACE_NO_TIMES: '1' }), maxBuffer: 64 << 20 }).toString()
    .split(dir + '/').join('images/');
}
function samePixels(a, b) {
  try { execFileSync(path.join(root, build, 'tests/pngcmp'), [a, b], { stdio: 'pipe' }); return ''; }
  catch (e) { return (e.stderr || '').toString() + (e.stdout || '').toString(); }
}
function colours(file) {
  try { return execFileSync(path.join(root, build, 'tests/pngcolors'), [file]).toString().trim().split(/\s+/).map(Number); }
  catch (e) { return [0, 0, 0]; }
}
function firstDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  for (let i = 0; i < Math.max(x.length, y.length); i++)
    if (x[i] !== y[i]) return 'line ' + (i + 1) + ': page ' + JSON.stringify(x[i]) + ' vs native ' + JSON.stringify(y[i]);
  return '';
}

/* A static server for build/web, on loopback. */
function serve() {
  const srv = http.createServer((req, res) => {
    const p = path.join(web, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!p.startsWith(web) || !fs.existsSync(p) || !fs.statSync(p).isFile()) { res.writeHead(404); res.end(); return; }
    const type = { '.html': 'text/html', '.js': 'text/javascript', '.lua': 'text/plain' }[path.extname(p)] || 'application/octet-stream';
    res.writeHead(200, { 'Content-Type': type });
    res.end(fs.readFileSync(p));
  });
  return new Promise(r => srv.listen(0, '127.0.0.1', () => r(srv)));
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const lessons = fs.readdirSync(path.join(root, 'lessons')).filter(n => /^\d\d_.*\.lua$/.test(n)).map(n => n.slice(0, -4)).sort()
    .filter(n => !process.env.TT_WEB_ONLY || n.startsWith(process.env.TT_WEB_ONLY));   // a quicker run while working on it
  const b = await launch();
  const rec = { requests: [], errors: [], loaded: 0 };
  const page = await newPage(b, rec);
  await page.size(1280, 900);
  const base = 'file://' + web + '/index.html';
  await page.goto(base + '?times=0');
  ok(await page.eval('typeof tt_page') === 'object', 'the page did not start (tt_page missing): ' + rec.errors.join('; '));
  await page.eval('localStorage.clear()');
  const times = {};

  /* every lesson, against the native binary */
  for (const name of lessons) {
    ok(await page.eval(pick(name)) === name, name + ': the picker has no such lesson');
    const r = await page.eval(RUN);
    times[name] = r.ms;
    const dir = path.join(tmp, 'native', name);
    let want = '';
    try { want = native(name, dir); } catch (e) { ok(false, name + ': the native run failed: ' + e.message); continue; }
    ok(r.rc === 0 && !r.stderr, name + ': the page run failed (rc ' + r.rc + '): ' + r.stderr.slice(0, 400));
    ok(r.stdout + '\n' === want, name + ': the trace differs from the native one at ' + firstDiff(r.stdout + '\n', want));
    const figs = fs.readdirSync(dir).sort();
    ok(JSON.stringify(figs) === JSON.stringify(r.figures.map(f => f.name).sort()),
       name + ': figures ' + r.figures.map(f => f.name).join(',') + ' in the page, ' + figs.join(',') + ' native');
    for (const f of r.figures) {
      const mine = path.join(tmp, 'page-' + f.name);
      fs.writeFileSync(mine, Buffer.from(f.b64, 'base64'));
      if (!fs.existsSync(path.join(dir, f.name))) continue;
      if (f.name.endsWith('.png')) ok(samePixels(mine, path.join(dir, f.name)) === '', name + ': ' + f.name + ' differs from the native PNG: ' + samePixels(mine, path.join(dir, f.name)));
      else ok(fs.readFileSync(mine).equals(fs.readFileSync(path.join(dir, f.name))), name + ': ' + f.name + ' differs from the native file');
    }
    // the report's figures appear in the frame, where the script wrote them
    const shown = await page.eval(`(() => { const d = document.getElementById('report').contentDocument;
      return d ? d.querySelectorAll('figure img, figure svg').length : -1; })()`);
    if (process.env.TT_WEB_DEBUG) console.log(await page.eval(`(() => { const d = document.getElementById('report').contentDocument;
      return d ? d.URL + ' ' + d.documentElement.outerHTML.length + ' ' + document.getElementById('report').srcdoc.length : 'no doc'; })()`));
    ok(shown === r.figures.length, name + ': ' + shown + ' figures shown in the report frame for ' + r.figures.length + ' written');
    const groups = await page.eval(`document.getElementById('report').contentDocument.querySelectorAll('details.g').length`);
    ok(groups > 0 || /\n/.test(r.stdout) === false, name + ': the report frame shows no trace groups');
  }

  /* an edited script runs; its trace names the lesson's file and line */
  await page.eval(pick('03_causal_mask'));
  let r = await page.eval(edit('local x = tt.ones(2, 3):label("x")\nprint("sum is " .. x:sum():item())\n') + ', ' + RUN);
  ok(r.rc === 0 && /sum is 6/.test(r.stdout) && /lessons\/03_causal_mask\.lua:1 /.test(r.stdout),
     'an edited script: rc ' + r.rc + ', output ' + r.stdout.slice(0, 300) + r.stderr);
  // kept across a reload, restored by "Reset lesson"
  await page.goto(base + '?times=0&lesson=03_causal_mask');
  ok(/sum is/.test(await page.eval(`document.getElementById('src').value`)), 'an edit is not kept across a reload');
  await page.eval(`document.getElementById('reset').click()`);
  const orig = fs.readFileSync(path.join(root, 'lessons/03_causal_mask.lua'), 'utf8');
  ok(await page.eval(`document.getElementById('src').value`) === orig, '"Reset lesson" does not restore the lesson');

  /* an error: the box says it, the editor marks its line */
  r = await page.eval(edit('local a = tt.ones(2, 3)\nlocal b = tt.ones(4, 5)\nlocal c = a + b\n') + ', ' + RUN);
  ok(r.rc !== 0 && r.error && /03_causal_mask\.lua:3:/.test(r.error) && r.mark === 3,
     'an error: rc ' + r.rc + ', box ' + r.error + ', marked line ' + r.mark);
  await page.shot(path.join(shots, 'error-1280.png'));

  /* a runaway loop: --timeout stops it, the page stays usable */
  await page.eval(`document.getElementById('timeout').value = 2`);
  let t0 = Date.now();
  r = await page.eval(edit('local n = 0\nwhile true do n = n + 1 end\n') + ', ' + RUN);
  const stopAfter = (Date.now() - t0) / 1000;
  ok(r.rc !== 0 && /timeout/.test(r.stderr) && r.mark === 2 && stopAfter < 8,
     'an endless loop: rc ' + r.rc + ' after ' + stopAfter + ' s, ' + r.stderr.slice(0, 200) + ', line ' + r.mark);
  // a loop inside one long C call ignores the hook: the page ends the worker
  t0 = Date.now();
  // (one find of ".-b" in 3e5 letters backtracks ~4.5e10 steps and holds 0.3 MB: no memory cap can end it first)
  r = await page.eval(edit('local s = string.rep("a", 3e5)\nlocal n = 0\nwhile true do n = n + (s:find(".-b") or 0) end\n') + ', ' + RUN);
  ok(r.rc !== 0 && /timeout/.test(r.stderr + (r.error || '')) && (Date.now() - t0) / 1000 < 12,
     'a long C call: rc ' + r.rc + ' after ' + (Date.now() - t0) / 1000 + ' s: ' + (r.error || r.stderr).slice(0, 200));
  // Stop, pressed by the reader
  await page.eval(`document.getElementById('timeout').value = 30`);
  await page.eval(edit('while true do end\n'));
  const pending = page.eval(RUN);
  await sleep(700);
  await page.eval(`document.getElementById('stop').click()`);
  r = await pending;
  ok(r.stopped && /Stopped/.test(r.status), 'Stop: ' + r.status);
  r = await page.eval(edit('print("still here")\n') + ', ' + RUN);
  ok(r.rc === 0 && /still here/.test(r.stdout), 'the page after Stop: rc ' + r.rc + ' ' + r.stdout + r.stderr);
  // the page itself kept answering while a script ran: a click is handled at once
  await page.eval(`document.getElementById('reset').click()`);

  /* the toggles */
  r = await page.eval(`document.getElementById('quiet').checked = true, ` + RUN);
  ok(r.rc === 0 && !/lessons\/03_causal_mask\.lua:\d+ /.test(r.stdout) && /=== 1\./.test(r.stdout), '-q still traces');
  await page.eval(`document.getElementById('quiet').checked = false, document.getElementById('values').checked = true`);
  await page.eval(`document.getElementById('seed').value = 7`);
  r = await page.eval(RUN);
  fs.mkdirSync(path.join(tmp, 'v'));
  // Printed values come from the portable kernels in the page: the same
  // digits as the native binary built with them (SIMD=0), not always as the
  // SIMD one (a sum of ones can be off by an ulp there).
  let want = execFileSync(path.join(root, build, 'scalar/tensortrace'), ['--trace=values', '--seed', '7', '--images', path.join(tmp, 'v'), 'lessons/03_causal_mask.lua'],
    { cwd: root, env: Object.assign({}, process.env, { TT_TRACE_NO_TIMES: '1' }) }).toString()
    .split(path.join(tmp, 'v') + '/').join('images/');
  ok(r.stdout + '\n' === want, '--trace=values --seed 7: differs from the native SIMD=0 binary at ' + firstDiff(r.stdout + '\n', want));
  await page.eval(`document.getElementById('values').checked = false, document.getElementById('seed').value = 0`);

  /* an exercise: the skeleton is not done yet; the solution passes */
  const ex = fs.readdirSync(path.join(root, 'lessons/exercises')).filter(n => /^\d\d_.*\.lua$/.test(n)).sort()[0];
  if (ex) {
    await page.eval(pick('exercises/' + ex.slice(0, -4)));
    r = await page.eval(RUN);
    ok(r.rc === 1 && r.verdict && /\u2717|not yet/i.test(r.status), 'exercise ' + ex + ' as given: rc ' + r.rc + ' ' + r.status);
    const sol = fs.readFileSync(path.join(root, 'lessons/exercises/solutions', ex), 'utf8');
    r = await page.eval(edit(sol) + ', ' + RUN);
    ok(r.rc === 0 && /matches/.test(r.status), 'exercise ' + ex + ' with the solution pasted in: rc ' + r.rc + ' ' + r.status + ' ' + (r.verdict || '') + r.stderr);
    await page.eval(`document.getElementById('reset').click()`);
  }

  /* ?lesson=NAME&run=1, and the screenshots */
  for (const [w, h] of [[1280, 900], [390, 844]]) {
    await page.size(w, h);
    await page.goto(base + '?lesson=03_causal_mask&run=1');
    r = await page.eval(`(tt_page.running() || Promise.reject(new Error('not running'))).then(${RESULT})`);
    ok(r.rc === 0 && /03_causal_mask/.test(r.status), '?lesson=03_causal_mask&run=1 at ' + w + ' px: ' + r.status);
    await page.eval('new Promise(r => setTimeout(r, 300))');
    const wide = await page.eval('document.documentElement.scrollWidth');
    ok(wide <= w, 'at ' + w + ' px the page is ' + wide + ' px wide (sideways scrolling)');
    if (w === 1280) {   // the README's picture: the trace around the first figure, beside the script
      await page.eval(`(() => { const f = document.getElementById('report').contentDocument.querySelector('figure');
        f.scrollIntoView({ block: 'center' }); })()`);
      await page.shot(path.join(shots, 'figure-1280.png'));
      await page.eval(`document.getElementById('report').contentWindow.scrollTo(0, 0)`);
    }
    const file = path.join(shots, 'page-' + w + '.png');
    await page.shot(file);
    const [sw, , c] = colours(file);
    ok(sw === w && c >= 200, 'the screenshot at ' + w + ' px is blank (' + sw + ' px, ' + c + ' colours)');
  }
  await page.size(1280, 900);

  /* from a static server: the same page, its requests only to that server */
  const srv = await serve();
  const origin = 'http://127.0.0.1:' + srv.address().port;
  await page.goto(origin + '/index.html?times=0&lesson=02_scaling');
  r = await page.eval(RUN);
  ok(r.rc === 0 && r.stdout + '\n' === native('02_scaling', path.join(tmp, 'srv')), 'from a static server: lesson 02 rc ' + r.rc + ' ' + r.stderr);
  srv.close();

  /* no request left the page; no console error */
  const foreign = rec.requests.filter(u => !(u.startsWith('file://' + web + '/') || u.startsWith(origin + '/') ||
    u.startsWith('blob:') || u.startsWith('data:') || u === 'about:blank' || u.startsWith('about:srcdoc')));
  ok(foreign.length === 0, 'requests outside the page\'s folder: ' + foreign.slice(0, 5).join(', '));
  const own = rec.requests.filter(u => !u.startsWith('blob:') && !u.startsWith('data:')).map(u => u.replace(/[?].*/, ''));
  ok(own.every(u => /\/(index\.html|lessons\.js|tensortrace\.js)$/.test(u) || u === 'about:blank'),
     'the page asked for more than its three files: ' + [...new Set(own)].join(', '));
  ok(rec.errors.length === 0, 'console errors: ' + rec.errors.slice(0, 5).join(' | '));
  b.close();

  const secs = n => times[n] === undefined ? '-' : (times[n] / 1000).toFixed(2) + ' s';
  console.log('in the page: ' + Object.keys(times).map(n => n.slice(0, 2) + ' ' + secs(n)).join(', '));
  console.log('lesson 03 in the page: ' + secs('03_causal_mask') + '; lesson 14 (with its checkpoint): ' + secs('14_induction_heads'));
  console.log(lessons.length + ' lessons run in the page; screenshots in ' + path.relative(root, shots));
}

main().catch(e => { ok(false, 'test-web stopped: ' + e.stack); }).finally(() => {
  quit();
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(passed + ' passed, ' + failed + ' failed');
  process.exit(failed ? 1 : 0);
});
