/* run.js — make test-web: the page of make web in headless Chromium, driven
   over the DevTools protocol (node's WebSocket; nothing from npm). Each lesson
   is picked and Run as a reader would; its terminal trace must equal the
   native binary's for the same lesson and seed (timings off in both), its
   figures the native PNGs pixel for pixel (pngcmp). Then an edited script,
   an error and its line, a runaway loop stopped by --timeout and by Stop
   (what it printed kept), a rerun's time, the spare worker's warmed heap,
   output streamed while a script runs, long output, the page's kernels'
   bits against the SIMD=0 binary, exercise verdicts and their lines,
   arguments and a training run, reload, reset and undo, a link carrying
   the code, unknown lessons, the layout at 390 px, lesson 16's prompt, the
   page's longest main-thread task while a result is shown, accessibility
   and hygiene (the report frame's too), the one-file page, a static
   server, and screenshots at 1280 and 390 px. Every request the page makes
   is recorded: only the page's own files may be asked for; no console
   error or warning may appear.
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
    if (m.method === 'Log.entryAdded' && /^(error|warning)$/.test(m.params.entry.level))
      record.errors.push('log ' + m.params.entry.level + ': ' + m.params.entry.text);
    if (m.method === 'Page.loadEventFired') record.loaded++;
  });
  // Workers are targets of their own: follow them too, so their requests count.
  await s('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  b.listeners.push(m => {
    if (m.method === 'Target.attachedToTarget' && m.sessionId === sessionId) {
      const ws = m.params.sessionId;
      if (m.params.targetInfo.type === 'iframe') record.frame = ws;   // the report frame, in a process of its own
      b.listeners.push(e => {
        if (e.sessionId === ws && e.method === 'Network.requestWillBeSent') record.requests.push(e.params.request.url);
        if (e.sessionId === ws && e.method === 'Runtime.exceptionThrown') record.errors.push('worker exception: ' + JSON.stringify(e.params.exceptionDetails).slice(0, 300));
        if (e.sessionId === ws && e.method === 'Runtime.consoleAPICalled' && /^(error|warning)$/.test(e.params.type))
          record.errors.push('worker console.' + e.params.type + ': ' + e.params.args.map(a => a.value || a.description).join(' '));
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
    async inFrame(expr) {   // in the report frame, through an isolated world: the page itself cannot look in
      const tree = (await s('Page.getFrameTree')).frameTree;
      const child = (tree.childFrames || [])[0];
      let r;
      if (child) {
        const { executionContextId } = await s('Page.createIsolatedWorld', { frameId: child.frame.id, worldName: 'test' });
        r = await s('Runtime.evaluate', { expression: expr, contextId: executionContextId, returnByValue: true });
      } else if (record.frame) r = await b.send('Runtime.evaluate', { expression: expr, returnByValue: true }, record.frame);
      return r ? r.result.value : null;
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
/* The report frame's accessibility, as axe's color-contrast and scrollable-region-focusable
   rules and WCAG 2.4.7 see it: text under 4.5:1 (3:1 if large), sideways-scrolling blocks no key
   reaches or that have no name, trace rows without a name, no visible focus ring on them. */
const CONTRAST = `const lum = c => { const v = c.match(/[\\d.]+/g).slice(0, 3).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
      return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
    const bg = e => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor; if (!/rgba\\(.*, 0\\)|transparent/.test(c)) return c; } return 'rgb(255, 255, 255)'; };
    const ratio = e => { const a = lum(getComputedStyle(e).color), b = lum(bg(e)); return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };`;
const FRAME_A11Y = `(() => { ${CONTRAST}
  const low = new Set(), all = [...document.querySelectorAll('body *')];
  for (const e of all) {
    if (!e.getClientRects().length || ![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const cs = getComputedStyle(e), px = parseFloat(cs.fontSize), large = px >= 24 || (px >= 18.66 && +cs.fontWeight >= 700);
    if (ratio(e) < (large ? 3 : 4.5)) low.add((e.className || e.tagName) + ' ' + ratio(e).toFixed(2) + ':1');
  }
  const named = e => (e.getAttribute('aria-label') || (document.getElementById(e.getAttribute('aria-labelledby')) || {}).textContent || '').trim();
  const unreachable = all.filter(e => /auto|scroll/.test(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth && (e.tabIndex < 0 || !named(e)));
  const rows = [...document.querySelectorAll('.rows')], unnamed = rows.filter(e => e.tabIndex !== 0 || !named(e));
  // (a rule, not a focus() here: whether a script's focus shows :focus-visible depends on the last input)
  const rings = [...document.styleSheets].flatMap(sh => [...sh.cssRules]).filter(r => r.selectorText &&
    r.selectorText.split(',').some(x => /^\\s*(\\.rows)?:focus-visible\\s*$/.test(x)) && +(/outline:\\s*([\\d.]+)px\\s+(solid|double|dashed|dotted)/.exec(r.cssText) || [0, 0])[1] >= 2);
  const ring = rows.length && !rings.length ? 'no :focus-visible rule with an outline of 2 px or more' : '';
  const bad = [];
  if (low.size) bad.push('contrast under AA: ' + [...low].join(', '));
  if (unreachable.length) bad.push(unreachable.length + ' sideways-scrolling blocks no key reaches, or unnamed: ' + unreachable.map(e => e.className || e.tagName).slice(0, 3).join(', '));
  if (unnamed.length) bad.push(unnamed.length + ' of ' + rows.length + ' trace rows without tabindex 0 and a name');
  if (ring) bad.push('no visible focus ring on trace rows: ' + ring);
  return bad.join('; ');
})()`;
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
function native(lesson, dir, args) {
  fs.mkdirSync(dir, { recursive: true });
  /* the native run writes to --images dir and its Figure lines name dir's
     files (tt.figure_path); the page writes to its own images/ */
  return execFileSync(path.join(root, 'tensortrace'), ['--images', dir, 'lessons/' + lesson + '.lua'].concat(args || []),
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

/* The longest task of the page's main thread while act() runs, in ms, from a trace (the
   Performance panel's events: a PerformanceObserver for 'longtask' does not see a task that
   only lays out and paints, such as a long text put on the page). */
async function longestTask(b, act) {
  const events = [];
  let complete;
  const completed = new Promise(r => { complete = r; });
  const listen = m => {
    if (m.method === 'Tracing.dataCollected') events.push(...m.params.value);
    if (m.method === 'Tracing.tracingComplete') complete();
  };
  b.listeners.push(listen);
  await b.send('Tracing.start', { transferMode: 'ReportEvents', traceConfig: { includedCategories: ['devtools.timeline', 'toplevel', '__metadata'] } });
  try { await act(); } finally { await b.send('Tracing.end'); await completed; b.listeners.splice(b.listeners.indexOf(listen), 1); }
  // the page's main thread: where the page's own script ran (in this trace or an earlier one)
  const mains = events.filter(e => e.name === 'thread_name' && e.args.name === 'CrRendererMain');
  const main = mains.find(t => events.some(e => e.pid === t.pid && e.tid === t.tid && e.name === 'FunctionCall' &&
    /\/index\.html/.test((e.args.data || {}).url || ''))) || longestTask.main;
  if (!main) throw new Error('the trace shows no script of the page run');
  longestTask.main = main;
  return Math.max(0, ...events.filter(e => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' &&
    /^(ThreadControllerImpl::)?RunTask$/.test(e.name)).map(e => e.dur / 1000));
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

let heldMs = {};   // the longest task while a result was shown, by case
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
    const shown = await page.inFrame(`document.querySelectorAll('figure img, figure svg').length`);
    ok(shown === r.figures.length, name + ': ' + shown + ' figures shown in the report frame for ' + r.figures.length + ' written');
    const groups = await page.inFrame(`document.querySelectorAll('details.g').length`);
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
  const orig = fs.readFileSync(path.join(root, 'lessons/03_causal_mask.lua'), 'utf8');
  const SRC = `document.getElementById('src').value`, OPTION = `document.getElementById('lesson').selectedOptions[0].textContent`;
  ok(/edited/.test(await page.eval(OPTION)), 'an edited lesson is not marked in the picker: ' + await page.eval(OPTION));
  // Reset asks first; a "no" keeps the edit, a "yes" resets, Undo brings the edit back
  await page.eval(`window.confirm = () => false, document.getElementById('reset').click()`);
  ok(/sum is/.test(await page.eval(SRC)), '"Reset lesson" answered no still reset the lesson');
  await page.eval(`window.confirm = () => true, document.getElementById('reset').click()`);
  ok(await page.eval(SRC) === orig && !/edited/.test(await page.eval(OPTION)), '"Reset lesson" does not restore the lesson');
  await page.eval(`(document.getElementById('undo') || {click() {}}).click()`);
  ok(/sum is/.test(await page.eval(SRC)) && /edited/.test(await page.eval(OPTION)), 'Undo after "Reset lesson" does not bring the edit back');
  await page.eval(`document.getElementById('reset').click()`);
  ok(await page.eval(SRC) === orig, '"Reset lesson" a second time does not restore the lesson');
  // the address bar follows the picker
  await page.eval(pick('05_hand_example'));
  ok(/[?&]lesson=05_hand_example(&|$)/.test(await page.eval('location.search')), 'the address bar does not follow the picker: ' + await page.eval('location.href'));
  await page.eval(pick('03_causal_mask'));

  /* an error: the box says it, the editor marks its line */
  r = await page.eval(edit('local a = tt.ones(2, 3)\nlocal b = tt.ones(4, 5)\nlocal c = a + b\n') + ', ' + RUN);
  ok(r.rc !== 0 && r.error && /03_causal_mask\.lua:3:/.test(r.error) && r.mark === 3,
     'an error: rc ' + r.rc + ', box ' + r.error + ', marked line ' + r.mark);
  await page.shot(path.join(shots, 'error-1280.png'));

  // a missing end: the line that opened the block is marked (the message names it)
  r = await page.eval(edit('local x = 1\nif x > 0 then\n  print(x)\n\n') + ', ' + RUN);
  ok(r.rc !== 0 && /to close 'if' at line 2/.test(r.error || '') && r.mark === 2, 'a missing end: box ' + r.error + ', marked line ' + r.mark);
  // the memory cap's hint speaks of the page, which has no --max-memory
  r = await page.eval(edit('local x = tt.zeros(20000, 20000)\n') + ', ' + RUN);
  ok(/memory cap/.test(r.error || '') && !/raise it with --max-memory/.test(r.error) && /page/.test(r.error), 'too much memory: ' + r.error);
  // an error of a lesson left during its run is not marked in the lesson now shown
  await page.eval(edit('local t = os.clock()\nwhile os.clock() - t < 1 do end\nlocal c = tt.ones(2, 3) + tt.ones(4, 5)\n'));
  const switched = page.eval(RUN);
  await sleep(300);
  await page.eval(pick('05_hand_example'));
  r = await switched;
  ok(r.mark === 0 && /not the lesson in the editor/.test(r.error || '') && /03_causal_mask\.lua:3/.test(r.error || ''),
     'an error of a lesson left during its run: marked line ' + r.mark + ' in 05, box ' + r.error);
  await page.eval(pick('03_causal_mask'));

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
  ok(r.stopped && /stopped after/.test(r.status), 'Stop: ' + r.status);
  // Stop keeps what the script printed and says where it was
  await page.eval(edit('local x = tt.ones(2, 2):label("x")\nprint("before the loop")\nwhile true do end\n'));
  const pending2 = page.eval(RUN);
  for (let i = 0; i < 100 && !/before the loop/.test(await page.eval(`document.getElementById('live').textContent`)); i++) await sleep(50);
  await page.eval(`document.getElementById('stop').click()`);
  r = await pending2;
  const live = await page.eval(`document.getElementById('live').hidden ? '' : document.getElementById('live').textContent`);
  ok(r.stopped && /before the loop/.test(live) && /before the loop/.test(r.stdout) && /past line 1 .*03_causal_mask\.lua:1\b/.test(r.error || '') && /stopped after/.test(r.status),
     'Stop keeps the output and says where: shown ' + JSON.stringify(live.slice(0, 200)) + ', box ' + r.error + ', line ' + r.mark);
  r = await page.eval(edit('print("still here")\n') + ', ' + RUN);
  ok(r.rc === 0 && /still here/.test(r.stdout), 'the page after Stop: rc ' + r.rc + ' ' + r.stdout + r.stderr);
  // the page itself kept answering while a script ran: a click is handled at once
  await page.eval(`document.getElementById('reset').click()`);

  /* instant reruns: the interpreter is compiled once and a worker waits ready */
  await page.eval(edit('print(1)\n'));
  await page.eval(RUN);
  // (from the click to the status saying it ran, with its output on the page; the report frame follows;
  // the best of three, as the machine's other work comes and goes)
  let wall = { ms: Infinity };
  for (let i = 0; i < 3; i++) {
    await sleep(1000);   // (the spare worker gets ready while the reader reads)
    const w = await page.eval(`new Promise(res => { const st = document.getElementById('status'), t = performance.now();
      new MutationObserver((x, o) => { if (/ran to the end/.test(st.textContent)) { o.disconnect();
        res({ ms: performance.now() - t, out: document.getElementById('live').textContent }); } }).observe(st, { childList: true });
      document.getElementById('run').click(); }).then(w => tt_page.running().then(() => w))`);
    if (w.ms < wall.ms) wall = w;
  }
  ok(wall.ms < 150 && /^1$/m.test(wall.out), 'a second print(1): ' + wall.ms.toFixed(0) + ' ms from click to result (150 at most): ' + wall.out);
  times.rerun = wall.ms;

  /* the spare worker touches its heap while the page is idle; a run on it is as right as any */
  let warmed = false;
  for (let t = 0; t < 300 && !(warmed = await page.eval('!!(tt_page.warm && tt_page.warm())')); t++) await sleep(100);
  ok(warmed, 'the spare worker did not touch its heap in 30 s of idle');
  r = await page.eval(edit('local x = tt.ones(4096, 4096)\nprint(string.format("sum %.0f", x:sum():item()))\n') + ', ' + RUN);
  ok(r.rc === 0 && /^sum 16777216$/m.test(r.stdout), 'a run on the warmed worker: ' + r.stdout + r.stderr);

  /* honest state: Run clears the last result at once; prints show while the script runs */
  r = await page.eval(edit('local x = tt.ones(2, 3):label("x")\nprint("first")\nlocal t = os.clock()\nwhile os.clock() - t < 1.5 do end\nprint("second")\n') + ', ' + RUN);
  const during = await page.eval(`(() => { document.getElementById('run').click();
    const gone = document.getElementById('report').hidden && document.getElementById('figures').hidden && document.getElementById('error').hidden;
    return new Promise(res => { const t0 = performance.now(); (function look() {
      const text = document.getElementById('live').textContent;
      if (/first/.test(text) || performance.now() - t0 > 5000) res({ gone, text, done: !tt_page.busy() }); else setTimeout(look, 20);
    })(); }); })()`);
  r = await page.eval(`tt_page.running().then(${RESULT})`);
  ok(during.gone, 'Run left the previous result on the page while the next run went');
  ok(/first/.test(during.text) && !/second/.test(during.text) && !during.done && /lessons\/03_causal_mask\.lua:1 /.test(during.text),
     'the output did not stream while the script ran: ' + JSON.stringify(during.text.slice(0, 200)));
  ok(r.rc === 0 && /second/.test(r.stdout), 'the streamed run did not end well: ' + r.status);

  /* very long output: the first lines, and a button for the rest */
  r = await page.eval(edit('for i = 1, 50000 do print("line " .. i) end\n') + ', ' + RUN);
  const long = await page.eval(`(() => { const p = document.getElementById('stdout'), b = p.querySelector('button');
    return { lines: p.textContent.split('\\n').length, button: b ? b.textContent : '' }; })()`);
  ok(r.rc === 0 && long.lines <= 2002 && /show all 500\d\d lines/.test(long.button),
     'a 50,000-line output: ' + long.lines + ' lines put on the page, button ' + JSON.stringify(long.button));
  await page.eval(`(document.querySelector('#stdout button') || {click() {}}).click()`);
  let all = '';   // (put on the page a block at a time)
  for (let i = 0; i < 200 && !/\nline 50000$/.test(all); i++) { await sleep(50); all = await page.eval(`document.getElementById('stdout').textContent`); }
  ok(all.split('\n').length === 50000 && all.split('\n').every((l, i) => l === 'line ' + (i + 1)),
     '"show all" does not show the lines as printed: ' + all.split('\n').length + ' lines');
  await page.eval(`document.getElementById('reset').click()`);

  /* showing a result holds the page's main thread briefly: its longest task from the click on
     Run until a second after the report frame has it, for lessons 03, 14 and 16 and a
     200,000-line print, and for that print's "show all" until its last line is on the page;
     the better of two tries, as the machine's other work comes and goes */
  const inPage = expr => () => page.eval(`Promise.resolve(${expr}).then(() => new Promise(r => setTimeout(r, 1000)))`);
  const RUN_SHOWN = inPage(`(document.getElementById('run').click(), tt_page.running().then(() => 0))`);
  const SHOW_ALL = inPage(`(document.querySelector('.raw').open = true, document.querySelector('#stdout button').click(),
    new Promise(r => { const t0 = performance.now(); (function done() { if (/line 200000$/.test(document.getElementById('stdout').lastChild.textContent.trim())
      || performance.now() - t0 > 20000) r(); else setTimeout(done, 100); })(); }))`);
  const tasks = {}, frameA11y = [];
  const best = (name, ms) => { tasks[name] = Math.min(tasks[name] === undefined ? Infinity : tasks[name], ms); };
  for (let k = 0; k < 2; k++) {
    for (const n of ['03_causal_mask', '14_induction_heads', '16_the_block']) {
      await page.eval(pick(n));
      await sleep(300);
      best(n, await longestTask(b, RUN_SHOWN));
      if (k === 0 && n === '14_induction_heads') frameA11y.push('lesson 14: ' + (await page.inFrame(FRAME_A11Y) || 'ok'));
    }
    await page.eval(pick('03_causal_mask') + ', ' + edit('for i = 1, 200000 do print("line " .. i) end\n'));
    await sleep(300);
    best('flood', await longestTask(b, RUN_SHOWN));
    best('show all', await longestTask(b, SHOW_ALL));
    await page.eval(`document.querySelector('.raw').open = false, document.getElementById('reset').click()`);
  }
  const worst = Math.max(...Object.values(tasks));
  ok(worst < 250, 'showing a result held the page for ' + worst.toFixed(0) + ' ms (250 at most): ' + JSON.stringify(tasks));
  heldMs = tasks;

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

  /* the page's kernels (wasm SIMD): the portable path's bits, against the native SIMD=0 binary */
  const bitsScript = `tt.trace.off()
tt.manual_seed(5)
local function dump(name, t)
  local flat = t:contiguous():reshape(t:numel()):totable()
  local h = 0
  for i, v in ipairs(flat) do h = (h * 31 + (string.unpack("<I4", string.pack("<f", v)))) % 4294967291 end
  print(string.format("%s %d %d %a", name, #flat, h, flat[#flat]))
end
for _, s in ipairs({{37, 53, 29}, {4, 8, 8}, {130, 257, 67}, {512, 512, 512}}) do
  local a, b = tt.randn(s[1], s[2]), tt.randn(s[2], s[3])
  dump("matmul " .. table.concat(s, "x"), a:matmul(b))
  dump("softmax " .. table.concat(s, "x"), (a:matmul(b) * 0.125):softmax(-1))
end
local q, k, v = tt.randn(2, 3, 45, 16), tt.randn(2, 3, 45, 16), tt.randn(2, 3, 45, 16)
dump("sdpa", tt.sdpa(q, k, v, {causal = true}))
local _, w = tt.sdpa(tt.randn(1, 2, 70, 8), tt.randn(1, 2, 70, 8), tt.randn(1, 2, 70, 8), {causal = true, weights = true})
dump("sdpa weights", w)
-- expf's ends (musl's cut-offs at log 2^-150 and log 2^128), NaN, subnormals
local x = tt.cat({tt.randn(1001) * 30, tt.tensor({-math.huge, math.huge, 0 / 0, -0.0, 88.72, 88.73, -103.9, -104,
                                                  -87.4, 1e-40, -1e-40, 89, -120})})
dump("exp", x:exp())
dump("sigmoid", x:sigmoid())
dump("gelu_tanh", x:gelu("tanh"))
local m = tt.randn(33, 7)
dump("broadcast", m / 3 + tt.randn(7) * m - tt.randn(33, 1))
`;
  fs.writeFileSync(path.join(tmp, 'bits.lua'), bitsScript);
  r = await page.eval(edit(bitsScript) + ', ' + RUN);
  want = execFileSync(path.join(root, build, 'scalar/tensortrace'), [path.join(tmp, 'bits.lua')], { cwd: root }).toString();
  ok(r.rc === 0 && r.stdout + '\n' === want, 'the page\'s kernels differ from the portable ones at ' + firstDiff(r.stdout + '\n', want) + r.stderr);
  await page.eval(`document.getElementById('reset').click()`);

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

  /* exercise 03: the status line is the verdict, and its line is marked */
  await page.eval(pick('exercises/03_causal_mask'));
  r = await page.eval(RUN);
  const todo = fs.readFileSync(path.join(root, 'lessons/exercises/03_causal_mask.lua'), 'utf8').split('\n').findIndex(l => /TODO\(allowed\)/.test(l)) + 1;
  ok(/^\u2717 not yet: `allowed` is missing/.test(r.status) && r.mark === todo,
     'exercise 03 as given: status ' + JSON.stringify(r.status) + ', marked line ' + r.mark + ' (the TODO is at ' + todo + ')');
  const sol03 = fs.readFileSync(path.join(root, 'lessons/exercises/solutions/03_causal_mask.lua'), 'utf8');
  const wrong = sol03.split('\n').map(l => /:softmax\("Nk"\):label\("weights"\)/.test(l)
    ? 'local weights = scores:softmax("Nk"):masked_fill(~allowed, 0):label("weights")' : l);
  const wline = wrong.findIndex(l => /masked_fill\(~allowed, 0\)/.test(l)) + 1;
  r = await page.eval(edit(wrong.join('\n')) + ', ' + RUN);
  ok(wline > 0 && r.status === '\u2717 `weights` (line ' + wline + '): mask_after_softmax' && r.mark === wline && /mask_after_softmax/.test(r.error || ''),
     'exercise 03, masked after the softmax: status ' + JSON.stringify(r.status) + ', marked line ' + r.mark + ' (want ' + wline + '), box ' + r.error);
  r = await page.eval(edit(sol03.split('\n').slice(0, 14).join('\n') + '\nlocal q = (\n') + ', ' + RUN);
  ok(/^\u2717 your script stopped with an error \(line 16\): .*near <eof>/.test(r.status) && r.mark === 16 && /near <eof>/.test(r.error || ''),
     'exercise 03 with a syntax error: status ' + JSON.stringify(r.status) + ', marked line ' + r.mark + ', box ' + r.error);
  await page.eval(`document.getElementById('reset').click()`);

  /* arguments; a training run: no timeout, progress redrawn in place, its checkpoint kept and downloadable */
  await page.eval(pick('14_induction_heads'));
  r = await page.eval(`document.getElementById('args').value = '--steps 3', ` + RUN);
  ok(r.rc === 0 && /^step 3 loss \d/m.test(r.stdout), 'lesson 14 with --steps 3: rc ' + r.rc + ' ' + r.stdout.slice(-200) + r.stderr);
  const ckpt = 'lessons/data/induction.safetensors', ckptBytes = fs.statSync(path.join(root, ckpt)).size;
  await page.eval(edit(`local args = {...}
local f = io.open("${ckpt}", "rb"); local n = #f:read("a"); f:close()
print("size " .. n)
if args[1] == "--retrain" then
  io.stderr:write("\\rstep 1\\rstep 2\\r"); io.stderr:write("\\n")
  tt.save("${ckpt}", {w = tt.ones(2, 2)}, {steps = "1"})
end
`));
  r = await page.eval(`document.getElementById('args').value = '--retrain', ` + RUN);
  const trained = await page.eval(`[document.getElementById('live').textContent, document.getElementById('figures').textContent]`);
  ok(r.rc === 0 && /step 2/.test(trained[0]) && !/step 1/.test(trained[0]) && trained[1].includes(ckpt + ' \u2913'),
     'a training run: rc ' + r.rc + ' ' + r.stderr + '; shown ' + JSON.stringify(trained));
  r = await page.eval(`document.getElementById('args').value = '', ` + RUN);
  const size = +(/size (\d+)/.exec(r.stdout) || [])[1];
  ok(r.rc === 0 && size > 0 && size < ckptBytes, 'the next run does not read the checkpoint the training run wrote: size ' + size + ' (shipped ' + ckptBytes + ') ' + r.stderr);
  await page.eval(`document.getElementById('reset').click()`);

  /* lesson 16's character model continues a prompt typed in the arguments field */
  await page.eval(pick('16_the_block') + `, document.getElementById('args').value = '', document.getElementById('args').focus()`);
  await page.send('Input.insertText', { text: '--prompt "The mask"' });
  r = await page.eval(RUN);
  const sampled = (/^T = 0\.6:\n {2}(.*)$/m.exec(r.stdout) || [])[1] || '';
  ok(r.rc === 0 && sampled.startsWith('The mask') && sampled.length > 'The mask'.length &&
     r.stdout + '\n' === native('16_the_block', path.join(tmp, 'prompt'), ['--prompt', 'The mask']),
     'lesson 16 with --prompt "The mask" typed in: rc ' + r.rc + ', sampled ' + JSON.stringify(sampled) + ' ' + r.stderr.slice(0, 300));
  await page.eval(`(a => { a.value = ''; a.dispatchEvent(new Event('change')); })(document.getElementById('args'))`);

  /* a link that carries the code opens it; unknown lessons say so */
  await page.eval(pick('05_hand_example') + ', ' + edit('print("from the link")\n'));
  await page.eval(`document.getElementById('share').click()`);
  let link = '';
  for (let i = 0; i < 50 && !link; i++) { await sleep(50); link = await page.eval(`document.getElementById('link').value`); }
  ok(/[?&]lesson=05_hand_example/.test(link) && /#code=[A-Za-z0-9_-]+$/.test(link), 'the share link: ' + link);
  await page.eval(`document.getElementById('reset').click()`);
  await page.goto('about:blank');
  await page.goto(link + '');
  ok(await page.eval(SRC) === 'print("from the link")\n' && await page.eval(`document.getElementById('lesson').value`) === '05_hand_example',
     'the share link does not open the code: ' + JSON.stringify((await page.eval(SRC)).slice(0, 80)));
  await page.eval(`(document.getElementById('undo') || {click() {}}).click()`);
  ok(await page.eval(SRC) === fs.readFileSync(path.join(root, 'lessons/05_hand_example.lua'), 'utf8'), 'Undo after opening a link does not bring back the reader\'s text');
  const lessons0 = fs.readdirSync(path.join(root, 'lessons')).filter(n => /^\d\d_.*\.lua$/.test(n)).sort()[0].slice(0, -4);
  for (const bad of ['99_nope', '__proto__', 'constructor', 'hasOwnProperty']) {
    await page.goto(base + '?lesson=' + bad);
    const st = await page.eval(`new Promise(r => setTimeout(r, 100)).then(() => [document.getElementById('status').textContent, document.getElementById('lesson').value])`);
    ok(st[0].includes('no lesson named \u201c' + bad + '\u201d') && st[1] === lessons0,
       '?lesson=' + bad + ': ' + JSON.stringify(st));
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
      await page.inFrame(`document.querySelector('figure').scrollIntoView({ block: 'center' })`);
      await sleep(300);   // (the frame draws the groups that came into view)
      await page.shot(path.join(shots, 'figure-1280.png'));
      await page.inFrame(`scrollTo(0, 0)`);
    }
    if (w === 390) {   // one column: the editor at a fixed height, the outcome of Run scrolled into view
      const seen = id => `(() => { const b = document.getElementById('${id}').getBoundingClientRect();
        return b.height > 0 && b.top >= 0 && b.bottom <= innerHeight + 1; })()`;
      const ed = await page.eval(`document.querySelector('.editor').getBoundingClientRect().height`);
      ok(ed > 200 && ed < 0.7 * h, 'at 390 px the editor is ' + ed + ' px tall');
      ok(await page.eval(seen('status')), 'at 390 px the outcome of Run is not in view: ' + await page.eval(`JSON.stringify(document.getElementById('status').getBoundingClientRect())`));
      await page.shot(path.join(shots, 'page-390-after-run.png'));
      await page.eval(`scrollTo(0, 0)`);
      r = await page.eval(edit('local a = tt.ones(2, 3)\nlocal c = a + tt.ones(4, 5)\n') + ', ' + RUN);
      ok(r.mark === 2 && await page.eval(seen('error')) && await page.eval(seen('mark')), 'at 390 px the error or its marked line is not in view (line ' + r.mark + '): ' +
         await page.eval(`JSON.stringify(['error', 'mark'].map(id => document.getElementById(id).getBoundingClientRect()))`));
      await page.shot(path.join(shots, 'page-390-error.png'));
      await page.eval(`window.confirm = () => true, document.getElementById('reset').click(), scrollTo(0, 0)`);
      const small = await page.eval(`[...document.querySelectorAll('button:not([hidden]), select')].filter(b => b.getBoundingClientRect().height < 40).map(b => b.id || b.tagName)`);
      ok(small.length === 0, 'at 390 px these controls are under 40 px tall: ' + small.join(', '));
    }
    const file = path.join(shots, 'page-' + w + '.png');
    await page.shot(file);
    const [sw, , c] = colours(file);
    ok(sw === w && c >= 200, 'the screenshot at ' + w + ' px is blank (' + sw + ' px, ' + c + ' colours)');
  }
  await page.size(1280, 900);

  /* the header: a long description takes two lines at most */
  let tallest = 0;
  for (const n of lessons.length > 1 ? lessons : ['16_the_block', '20_precision']) {
    await page.eval(pick(n));
    tallest = Math.max(tallest, await page.eval(`document.querySelector('header').getBoundingClientRect().height`));
  }
  ok(tallest <= 64, 'at 1280 px the header is ' + tallest + ' px tall');

  /* reading at 1366 px: the lessons' 80-column lines whole in the editor and in the report's
     narration (a line wrapped again there reads ragged); a "Run it" line's options offered in
     the arguments field */
  await page.size(1366, 768);
  await page.eval(pick('15_positions'));
  await sleep(300);   // (the report frame takes the new width)
  const cols = `(e => { const cs = getComputedStyle(e), c = document.createElement('canvas').getContext('2d');
    c.font = cs.fontSize + ' ' + cs.fontFamily; const w = c.measureText('x'.repeat(80)).width;
    return Math.floor(80 * (e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)) / w); })`;
  const editorCols = await page.eval(`${cols}(document.getElementById('src'))`);
  const sayCols = await page.inFrame(`(() => { const p = document.createElement('pre'); p.className = 'say';
    (document.querySelector('main') || document.body).appendChild(p); const n = ${cols}(p); p.remove(); return n; })()`);
  const offered = await page.eval(`document.getElementById('args').placeholder`);
  ok(editorCols >= 80 && sayCols >= 80 && offered === '--retrain, --back 3',
     'at 1366 px: ' + editorCols + ' columns in the editor, ' + sayCols + ' in the report\'s narration (80 wanted); arguments offered: ' + JSON.stringify(offered));
  await page.size(1280, 900);

  /* accessibility and hygiene */
  const hy = await page.eval(`(() => {
    ${CONTRAST}
    const st = document.getElementById('status'); st.className = 'status ok';
    const okRatio = ratio(st); st.className = 'status';
    document.getElementById('src').focus();
    const ring = getComputedStyle(document.querySelector('.editor')).outlineStyle;
    return { sandbox: document.getElementById('report').getAttribute('sandbox'),
      csp: document.querySelector('meta[http-equiv=Content-Security-Policy]').content,
      gutter: ratio(document.getElementById('gutter')), ok: okRatio, ring,
      live: document.getElementById('error').getAttribute('role'),
      regions: [...document.querySelectorAll('pre')].filter(p => p.id !== 'gutter' && p.tabIndex < 0).map(p => p.id) };
  })()`);
  ok(!/allow-same-origin/.test(hy.sandbox), 'the report frame\'s sandbox: ' + hy.sandbox);
  // the report frame: lesson 14's report (FLOP badges, copy marks), and an error's (its traceback)
  frameA11y.push('an error: ' + (await page.inFrame(FRAME_A11Y) || 'ok'));
  ok(frameA11y.length === 2 && frameA11y.every(f => /: ok$/.test(f)), 'the report frame\'s accessibility: ' + frameA11y.join(' | '));
  ok(/'wasm-unsafe-eval'/.test(hy.csp) && !/'unsafe-eval'/.test(hy.csp), 'the CSP: ' + hy.csp);
  ok(hy.gutter >= 4.5 && hy.ok >= 4.5, 'contrast under 4.5:1: line numbers ' + hy.gutter.toFixed(2) + ', the "ran" status ' + hy.ok.toFixed(2));
  ok(hy.ring !== 'none', 'the focused editor has no focus ring');
  ok(hy.live === 'alert' && hy.regions.length === 0, 'the error box is not a live region, or scroll regions no key reaches: ' + hy.regions.join(', '));

  /* from a static server: the same page, its requests only to that server */
  const srv = await serve();
  const origin = 'http://127.0.0.1:' + srv.address().port;
  await page.goto(origin + '/index.html?times=0&lesson=02_scaling');
  r = await page.eval(RUN);
  ok(r.rc === 0 && r.stdout + '\n' === native('02_scaling', path.join(tmp, 'srv')), 'from a static server: lesson 02 rc ' + r.rc + ' ' + r.stderr);
  srv.close();

  /* make web-single: the whole page in one file, asking for nothing else */
  const single = path.join(root, 'build/tensortrace.html'), before = rec.requests.length;
  await page.goto('file://' + single + '?times=0&lesson=02_scaling');
  r = await page.eval(RUN);
  ok(r.rc === 0 && r.stdout + '\n' === native('02_scaling', path.join(tmp, 'single')), 'the one-file page: lesson 02 rc ' + r.rc + ' ' + r.stderr);
  const asked = rec.requests.slice(before).filter(u => !/^(blob|data|about):/.test(u)).map(u => u.replace(/[?#].*/, ''));
  ok(asked.length > 0 && asked.every(u => u === 'file://' + single), 'the one-file page asked for ' + [...new Set(asked)].join(', '));

  /* no request left the page; no console error */
  const foreign = rec.requests.filter(u => !(u.startsWith('file://' + web + '/') || u.startsWith('file://' + single) || u.startsWith(origin + '/') ||
    u.startsWith('blob:') || u.startsWith('data:') || u === 'about:blank' || u.startsWith('about:srcdoc')));
  ok(foreign.length === 0, 'requests outside the page\'s folder: ' + foreign.slice(0, 5).join(', '));
  const own = rec.requests.filter(u => !u.startsWith('blob:') && !u.startsWith('data:')).map(u => u.replace(/[?#].*/, ''));
  ok(own.every(u => /\/(index\.html|lessons\.js|tensortrace\.js|tensortrace\.html)$/.test(u) || u === 'about:blank'),
     'the page asked for more than its three files: ' + [...new Set(own)].join(', '));
  ok(rec.errors.length === 0, 'console errors: ' + rec.errors.slice(0, 5).join(' | '));
  b.close();

  const secs = n => times[n] === undefined ? '-' : (times[n] / 1000).toFixed(2) + ' s';
  console.log('in the page: ' + Object.keys(times).map(n => n.slice(0, 2) + ' ' + secs(n)).join(', '));
  console.log('the longest main-thread task while a result was shown (ms): ' + Object.keys(heldMs).map(n => n + ' ' + heldMs[n].toFixed(0)).join(', '));
  console.log('lesson 03 in the page: ' + secs('03_causal_mask') + '; lesson 14 (with its checkpoint): ' + secs('14_induction_heads'));
  console.log(lessons.length + ' lessons run in the page; screenshots in ' + path.relative(root, shots));
}

// (tests/bench/web.js, make bench-web, drives the page with the same pieces)
if (require.main !== module) module.exports = { launch, newPage, quit, pick, edit, RUN, tmp };
else main().catch(e => { ok(false, 'test-web stopped: ' + e.stack); }).finally(() => {
  quit();
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(passed + ' passed, ' + failed + ' failed');
  process.exit(failed ? 1 : 0);
});
