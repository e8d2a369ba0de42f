/* page.js — the page of make web: pick a lesson, edit it, run it in the
   interpreter compiled to WebAssembly (tensortrace.js), read the run as the
   --report page shows it. The wasm module is compiled once, here, and handed
   to each Web Worker; one worker is always started in advance, so a Run
   begins at once. A worker holds one interpreter instance for one run, made
   from this page's own copy of tensortrace.js (a Blob, so file:// works):
   Stop, or a script that ignores --timeout inside a long C kernel, ends the
   worker, and the page stays. What the script prints reaches the page while
   it runs. */
'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var L = window.TT_LESSONS, params = new URLSearchParams(location.search), hash = location.hash;
  var byName = new Map();   // (a Map: a name such as __proto__ is only a name)
  L.lessons.forEach(function (l) { byName.set(l.name, l); });
  var store = {   // localStorage, when the browser allows it (file:// may not)
    get: function (k) { try { return localStorage.getItem('tensortrace:' + k); } catch (e) { return null; } },
    set: function (k, v) { try { localStorage.setItem('tensortrace:' + k, v); } catch (e) { /* private mode */ } },
    del: function (k) { try { localStorage.removeItem('tensortrace:' + k); } catch (e) { /* private mode */ } }
  };
  var MAX_MEMORY = '1G';   /* the sandbox's default (--sandbox) */
  var SHOWN_LINES = 2000;  /* lines of output put on the page before "show all" */
  var CHUNK_LINES = 1000;  /* "show all" puts the rest on the page in blocks of this many lines */
  var LIVE_LINES = 300;    /* the tail shown while a script runs: each repaint lays it out again */
  var REPORT_BYTES = 1 << 20;   /* a larger report is shown when asked for */
  var src = $('src'), gutter = $('gutter'), mark = $('mark');
  var current = null, job = null, last = null, urls = [], undoText = null;
  var narrow = window.matchMedia('(max-width: 820px)');

  /* ===== the lesson picker ===== */
  var groups = { lesson: document.createElement('optgroup'), exercise: document.createElement('optgroup') };
  groups.lesson.label = 'Lessons';
  groups.exercise.label = 'Exercises (Run checks your work against the solution)';
  function title(l) { return l.name.replace(/^exercises\//, 'exercise ').replace(/_/g, ' '); }
  L.lessons.forEach(function (l) {
    var o = document.createElement('option');
    o.value = l.name;
    o.title = l.about;
    l.option = o;
    groups[l.kind].appendChild(o);
  });
  $('lesson').appendChild(groups.lesson);
  if (groups.exercise.children.length) $('lesson').appendChild(groups.exercise);

  function original(l) { return L.files[l.path].text; }
  function edited(l) { var s = store.get('src:' + l.name); return s !== null && s !== original(l); }
  function markEdited(l) { l.option.textContent = title(l) + (edited(l) ? ' \u270e edited' : ''); }
  L.lessons.forEach(markEdited);
  function keep(l, text) {
    if (text === original(l)) store.del('src:' + l.name); else store.set('src:' + l.name, text);
    markEdited(l);
  }
  function follow(l) {   // the address bar names the lesson shown, so copying it shares that lesson
    var q = new URLSearchParams(location.search);
    q.set('lesson', l.name);
    q.delete('run');
    try { history.replaceState(null, '', '?' + q.toString().replace(/%2F/g, '/')); } catch (e) { /* file:// in some browsers */ }
  }
  // The arguments a lesson's "Run it: ./tensortrace lessons/NAME.lua --retrain"
  // lines give: here they go in the arguments field (its placeholder).
  function argsOf(l) {
    var found = [], re = /\.\/tensortrace \S+\.lua (--\S+(?: "[^"]*"| (?!\()[^\s-]\S*)?)/g, m;
    while ((m = re.exec(original(l)))) if (found.indexOf(m[1]) < 0) found.push(m[1]);
    return found;
  }
  function setText(text) { src.value = text; src.scrollTop = 0; showError(null); numberLines(); }
  function open(name) {
    var l = byName.get(name), known = !!l;
    if (!known) l = L.lessons[0];
    current = l;
    $('lesson').value = l.name;
    $('about').textContent = l.about;
    $('about').title = l.about;
    var saved = store.get('src:' + l.name);
    setText(saved !== null ? saved : original(l));
    $('args').value = store.get('args:' + l.name) || '';
    $('args').placeholder = argsOf(l).join(', ');
    store.set('lesson', l.name);
    offerUndo(null);
    follow(l);
    return known;
  }
  $('lesson').addEventListener('change', function () { open(this.value); });

  /* ===== keep and share: reset and undo, download, open a file, a link ===== */
  function offerUndo(text, what) {
    undoText = text;
    $('undo').hidden = text === null;
    if (text !== null) { $('undo').textContent = 'Undo ' + what; setStatus(what + ' done: Undo brings your text back.'); }
  }
  function replaceText(text, what) {   // a new text for the lesson; the old one stays one Undo away
    var old = src.value;
    setText(text);
    keep(current, text);
    offerUndo(old, what);
  }
  $('reset').addEventListener('click', function () {
    if (src.value === original(current)) { setStatus('Nothing to reset: ' + current.path + ' is as shipped.'); return; }
    if (!window.confirm('Throw away your edits of ' + current.path + '? (Undo can bring them back until you switch lessons.)')) return;
    replaceText(original(current), 'reset');
  });
  $('undo').addEventListener('click', function () {
    if (undoText === null) return;
    var text = undoText;
    offerUndo(null);
    setText(text);
    keep(current, text);
    setStatus('Your text is back.');
  });
  function basename(l) { return l.path.split('/').pop(); }
  $('save').addEventListener('click', function () {
    var a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([src.value], { type: 'text/plain' }));
    a.download = basename(current);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(URL.revokeObjectURL.bind(URL, a.href), 10000);
  });
  $('open').addEventListener('click', function () { $('upload').click(); });
  $('upload').addEventListener('change', function () {
    var f = this.files[0];
    if (!f) return;
    f.text().then(function (text) { replaceText(text, 'open ' + f.name); });
    this.value = '';
  });
  function toBase64url(bytes) {
    var s = '';
    for (var i = 0; i < bytes.length; i += 8192) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  function fromBase64url(s) { return decode({ base64: s.replace(/-/g, '+').replace(/_/g, '/') }); }
  function through(bytes, stream) { return new Response(new Blob([bytes]).stream().pipeThrough(stream)).arrayBuffer(); }
  function packCode(text) {   // deflate-raw, base64url: the link's fragment, never sent to a server
    return through(new TextEncoder().encode(text), new CompressionStream('deflate-raw'))
      .then(function (b) { return toBase64url(new Uint8Array(b)); });
  }
  function unpackCode(s) {
    return through(fromBase64url(s), new DecompressionStream('deflate-raw'))
      .then(function (b) { return new TextDecoder().decode(b); });
  }
  $('share').addEventListener('click', function () {
    packCode(src.value).then(function (code) {
      var link = location.href.replace(/#.*$/, '') + '#code=' + code, box = $('link');
      box.value = link;
      box.hidden = false;
      box.focus();
      box.select();
      var said = 'A link that opens your version of ' + current.path + ' (' + link.length + ' characters) is below';
      if (navigator.clipboard) navigator.clipboard.writeText(link).then(function () { setStatus(said + ', and copied.'); },
        function () { setStatus(said + ': copy it.'); });
      else setStatus(said + ': copy it.');
    });
  });
  function openLink() {   // #code=… carries a script for the lesson named by ?lesson=
    var m = /^#code=([A-Za-z0-9_-]+)$/.exec(hash);
    if (!m) return Promise.resolve();
    return unpackCode(m[1]).then(function (text) {
      if (text !== src.value) replaceText(text, 'open the link');
      setStatus('Opened the code the link carries, in ' + current.path + (undoText !== null ? ': Undo brings your own text back.' : '.'));
    }, function () { setStatus('The link\u2019s code is damaged (cut short?): ' + current.path + ' is shown as it was.', 'bad'); });
  }

  /* ===== the editor: line numbers, tab handling, the error's line ===== */
  function numberLines() {
    var n = src.value.split('\n').length, s = '';
    for (var i = 1; i <= n; i++) s += i + '\n';
    gutter.textContent = s;
    gutter.scrollTop = src.scrollTop;
  }
  var lineHeight = function () { return parseFloat(getComputedStyle(src).lineHeight); };
  function placeMark() {
    if (mark.hidden) return;
    mark.style.top = (parseFloat(getComputedStyle(src).paddingTop) + (mark.line - 1) * lineHeight() - src.scrollTop) + 'px';
  }
  src.addEventListener('input', function () {
    numberLines();
    keep(current, src.value);
  });
  src.addEventListener('scroll', function () { gutter.scrollTop = src.scrollTop; placeMark(); });
  var escaped = false;
  src.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') { escaped = true; return; }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); return; }
    if (e.key !== 'Tab' || escaped || e.altKey || e.ctrlKey) { escaped = false; return; }
    e.preventDefault();
    var v = src.value, a = src.selectionStart, b = src.selectionEnd;
    var start = v.lastIndexOf('\n', a - 1) + 1;
    if (!e.shiftKey && a === b) {
      src.setRangeText('    ', a, b, 'end');
    } else {   // indent or unindent every selected line by four spaces
      var end = b > a && v[b - 1] === '\n' ? b - 1 : b;
      var lines = v.slice(start, end).split('\n');
      var moved = lines.map(function (s) { return e.shiftKey ? s.replace(/^ {1,4}/, '') : '    ' + s; }).join('\n');
      src.setRangeText(moved, start, end, 'select');
    }
    src.dispatchEvent(new Event('input'));
  });
  src.addEventListener('blur', function () { escaped = false; });

  /* The error box (a live region the editor points to) and the red line. */
  function showError(text, line) {
    var box = $('error');
    box.hidden = !text;
    box.textContent = text || '';
    mark.hidden = !line;
    if (text) { src.setAttribute('aria-invalid', 'true'); src.setAttribute('aria-describedby', 'error'); }
    else { src.removeAttribute('aria-invalid'); src.removeAttribute('aria-describedby'); }
    if (!line) return;
    mark.line = line;
    placeMark();
    var top = (line - 1) * lineHeight();   // bring the line into view
    if (top < src.scrollTop || top > src.scrollTop + src.clientHeight - 2 * lineHeight())
      src.scrollTop = Math.max(0, top - src.clientHeight / 3);
    var link = document.createElement('a');
    link.href = '#';
    link.textContent = ' (line ' + line + ')';
    link.addEventListener('click', function (e) {
      e.preventDefault();
      var at = src.value.split('\n').slice(0, line - 1).join('\n').length + (line > 1 ? 1 : 0);
      src.focus();
      src.setSelectionRange(at, at);
    });
    box.appendChild(link);
  }

  /* ===== options ===== */
  var opts = ['values', 'quiet'];
  opts.forEach(function (id) {
    $(id).checked = store.get('opt:' + id) === '1';
    $(id).addEventListener('change', function () { store.set('opt:' + id, this.checked ? '1' : '0'); });
  });
  $('args').addEventListener('change', function () { store.set('args:' + current.name, this.value); });
  ['seed', 'timeout'].forEach(function (id) {
    if (store.get('opt:' + id)) $(id).value = store.get('opt:' + id);
    $(id).addEventListener('change', function () { store.set('opt:' + id, this.value); });
  });

  /* ===== the interpreter: compiled once, one worker started in advance ===== */
  // A worker: one interpreter instance, one run, then it is thrown away.
  // What the script prints goes to the page in batches while it runs.
  function workerMain() {
    var out = [], err = [], ready = null, windowAt = 0, inWindow = 0;
    function flush() {
      if (out.length || err.length) self.postMessage({ out: out, err: err });
      out = [];
      err = [];
    }
    // The first lines of every 50 ms go at once, so a quiet script's prints
    // show as they come; a flood goes in batches (no timer runs here while
    // the script does).
    function tick() {
      var now = performance.now();
      if (now - windowAt > 50) { windowAt = now; inWindow = 0; }
      if (++inWindow <= 5) flush();
    }
    function start(module, env, files) {
      ready = createTensortrace({
        noInitialRun: true,
        thisProgram: 'tensortrace',
        print: function (s) { out.push(s); tick(); },
        printErr: function (s) { err.push(s); tick(); },
        quit: function (status, e) { throw e; },
        instantiateWasm: function (imports, done) {   // the page's compiled module: no compiling here
          WebAssembly.instantiate(module, imports).then(function (instance) { done(instance, module); });
          return {};
        },
        preRun: [function (M) { Object.keys(env).forEach(function (k) { M.ENV[k] = env[k]; }); }]
      });
      ready = ready.then(function (M) { return setUp(M, files); });
      ready.then(function () { self.postMessage({ ready: true }); });
    }
    function mkdirs(M, p) {
      var parts = p.split('/'), dir = '/w';
      for (var i = 0; i < parts.length - 1; i++) {
        dir += '/' + parts[i];
        try { M.FS.mkdir(dir); } catch (e) { /* there already */ }
      }
    }
    var initial = null;
    function setUp(M, files) {   // the lessons' files, written while the worker waits for its run
      initial = files;
      progressLines(M);
      M.FS.mkdir('/w');
      M.FS.mkdir('/out');
      Object.keys(files).forEach(function (p) { mkdirs(M, p); M.FS.writeFile('/w/' + p, files[p]); });
      try { M.FS.mkdir('/w/images'); } catch (e) { /* there already */ }
      M.FS.chdir('/w');
      return M;
    }
    // A progress line redrawn with \r goes to the page as it is drawn, ending in \r.
    function progressLines(M) {
      var tty = M.FS.getStream(2) && M.FS.getStream(2).tty, put = tty && tty.ops.put_char;
      if (!put) return;
      tty.ops.put_char = function (t, c) {
        if (c !== 13) return put(t, c);
        err.push(new TextDecoder().decode(new Uint8Array(t.output)) + '\r');
        t.output = [];
        tick();
      };
    }
    function changed(M, dir) {   // the files a training run wrote there: checkpoints
      var found = [];
      M.FS.readdir('/w/' + dir).forEach(function (n) {
        var p = dir + '/' + n, was = initial[p], now;
        if (n === '.' || n === '..' || M.FS.isDir(M.FS.stat('/w/' + p).mode)) return;
        now = M.FS.readFile('/w/' + p);
        if (!was || was.length !== now.length || was.some(function (b, i) { return b !== now[i]; })) found.push({ path: p, bytes: now });
      });
      return found;
    }
    function run(M, job) {
      M.FS.writeFile('/w/' + job.path, job.text);
      var t0 = performance.now(), rc = 0;
      try { rc = M.callMain(job.args); } catch (e) { rc = e && e.status !== undefined ? e.status : (err.push(String(e)), 1); }
      var ms = performance.now() - t0, figures = [], report = null;
      M.FS.readdir('/w/images').forEach(function (n) {
        if (n !== '.' && n !== '..') figures.push({ name: n, bytes: M.FS.readFile('/w/images/' + n) });
      });
      try {   // (emscripten's umask is 0777: the report is written with mode 0)
        M.FS.chmod('/out/report.html', 420);
        report = M.FS.readFile('/out/report.html', { encoding: 'utf8' });
      } catch (e) { /* no report: the script did not start */ }
      flush();
      self.postMessage({ done: true, rc: rc, ms: ms, report: report, figures: figures, written: job.training ? changed(M, 'lessons/data') : [] });
    }
    // A page of fresh wasm memory faults on its first touch (about 10 us a
    // 4 KiB page on a VM, where the native binary asks for 2 MiB pages):
    // while the page is idle the spare worker touches the first WARM_BYTES
    // of its heap, a slice a task, so a Run waits for one slice at most and
    // the script's tensors land on pages already there.
    var WARM_BYTES = 128 << 20, WARM_SLICE = 1 << 20, warmed = [], warming = false;
    function warm(M) {
      if (!warming) return;
      var p = warmed.length * WARM_SLICE < WARM_BYTES ? M._malloc(WARM_SLICE) : 0;
      if (!p) { warming = false; self.postMessage({ warm: true }); return; }
      M.HEAPU8.fill(0, p, p + WARM_SLICE);
      warmed.push(p);
      setTimeout(warm, 0, M);
    }
    self.onmessage = function (ev) {
      if (ev.data.module) start(ev.data.module, ev.data.env, ev.data.files);
      else if (ev.data.warm) ready.then(function (M) { if (!warming && !warmed.length) { warming = true; warm(M); } });
      else ready.then(function (M) {
        warming = false;
        warmed.forEach(function (p) { M._free(p); });   // free again, the pages stay
        run(M, ev.data);
      });
    };
  }
  // The worker's copy of tensortrace.js leaves out the embedded wasm: the page compiled it.
  var ttSource = createTensortrace.toString(), WASM_URI = /(data:application\/octet-stream;base64,)([A-Za-z0-9+\/=]+)/;
  var wasmBase64 = (WASM_URI.exec(ttSource) || [])[2];
  var workerURL = URL.createObjectURL(new Blob(['var _scriptDir;\nvar createTensortrace = ' +
    ttSource.replace(WASM_URI, '$1') + ';\n(' + workerMain.toString() + ')();\n'], { type: 'text/javascript' }));
  var wasmModule = wasmBase64 ? WebAssembly.compile(decode({ base64: wasmBase64 }))
    : Promise.reject(new Error('tensortrace.js holds no embedded wasm'));
  var workerEnv = {};
  if (params.get('times') === '0') workerEnv.TT_TRACE_NO_TIMES = '1';   /* the tests compare traces without timings */
  function startWorker() {
    var w = { worker: new Worker(workerURL) };
    w.ready = new Promise(function (res, rej) {
      w.worker.onmessage = function (ev) { if (ev.data.ready) res(w); };
      w.worker.onerror = function (ev) { ev.preventDefault(); rej(new Error(ev.message)); };
    });
    wasmModule.then(function (m) { w.worker.postMessage({ module: m, env: workerEnv, files: lessonFiles() }); });
    return w;
  }
  // The spare warms its heap only while no run is going (it would take a core from it).
  function warmSpare() {
    var w = spare;
    w.ready.then(function () {
      if (job || w !== spare) return;
      w.worker.addEventListener('message', function (ev) { if (ev.data.warm) w.warm = true; });
      w.worker.postMessage({ warm: true });
    });
  }
  var spare = startWorker();
  warmSpare();

  function decode(f) {
    if (f.text !== undefined) return new TextEncoder().encode(f.text);
    var s = atob(f.base64), b = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }
  var decoded = null;   // the lessons' files as bytes, decoded once
  function lessonFiles() {
    if (!decoded) {
      decoded = {};
      Object.keys(L.files).forEach(function (p) { decoded[p] = decode(L.files[p]); });
    }
    return decoded;
  }
  function setStatus(text, cls) { $('status').textContent = text; $('status').className = 'status ' + (cls || ''); }

  /* ===== output: streamed while the script runs, shown in chunks ===== */
  var shown = 0;   // bumped when a run's result is cleared: a result still being shown stops there
  function clearResult() {   // Run: the previous run's result goes at once
    shown++;
    urls.forEach(URL.revokeObjectURL);
    urls = [];
    showError(null);
    $('figures').hidden = true;
    $('figures').textContent = '';
    $('verdict').hidden = true;
    $('report').hidden = true;
    $('report').removeAttribute('srcdoc');
    $('stdout').textContent = '';
    $('live').textContent = '';
    $('live').hidden = false;
    document.querySelectorAll('#result > .more').forEach(function (b) { b.remove(); });
  }
  function lastLines(lines, n) {
    return (lines.length > n ? '(' + (lines.length - n) + ' earlier lines above)\n' : '') + lines.slice(-n).join('\n');
  }
  function paintLive(j) {   // at most one repaint a frame, of the last lines only
    if (j.painting) return;
    j.painting = true;
    requestAnimationFrame(function () {
      j.painting = false;
      var live = $('live');
      live.textContent = lastLines(j.lines, LIVE_LINES).replace(/\r$/gm, '');
      live.scrollTop = live.scrollHeight;
    });
  }
  function lineEnd(text, from, n) {   // where the n-th line from `from` ends (at its newline, or the text's end)
    var at = from - 1;
    for (var i = 0; i < n; i++) if ((at = text.indexOf('\n', at + 1)) < 0) return text.length;
    return at;
  }
  function showText(pre, text) {   // the first lines, and a button for all of them
    var cut = lineEnd(text, 0, SHOWN_LINES);
    pre.textContent = text.slice(0, cut);
    if (cut === text.length) return;
    var more = document.createElement('button');
    more.type = 'button';
    more.className = 'more';
    var count = 1;
    for (var at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) count++;
    more.textContent = 'show all ' + count + ' lines';
    more.addEventListener('click', function () {
      more.remove();
      pre.firstChild.appendData('\n');   // (a block's last newline draws no line: the text stays the output's)
      showRest(pre, text, cut + 1, pre.firstChild);
    });
    pre.appendChild(more);
  }
  // The rest of a long output, a block of lines a task: each block is laid
  // out on its own, and only when scrolled to (.chunk), so the page keeps
  // answering while a flood is shown; it stops if a new run cleared the text.
  function showRest(pre, text, from, after) {
    if (from > text.length || after.parentNode !== pre) return;
    var to = lineEnd(text, from, CHUNK_LINES), block = document.createElement('div');
    block.className = 'chunk';
    block.textContent = text.slice(from, to + 1);
    pre.appendChild(block);
    setTimeout(showRest, 0, pre, text, to + 1, block);
  }
  // The last line of the running file that the trace named: where a stopped script was.
  function lastLine(j) {
    var re = new RegExp('^' + j.lesson.path.replace(/[.]/g, '\\.') + ':(\\d+)');
    for (var i = j.lines.length - 1; i >= 0 && i >= j.lines.length - 200; i--) {
      var m = re.exec(j.lines[i]);
      if (m) return +m[1];
    }
    return 0;
  }

  /* ===== running ===== */
  function take(j, batch, into) {   // a batch of lines the worker sent (a flood sends thousands)
    for (var i = 0; i < batch.length; i++) {
      var s = batch[i], n = j.lines.length;
      into.push(s);
      // a progress line (ending in \r) replaces the one before it
      if (n && s.charCodeAt(s.length - 1) === 13 && j.lines[n - 1].charCodeAt(j.lines[n - 1].length - 1) === 13) j.lines[n - 1] = s;
      else j.lines.push(s);
    }
  }
  function run() {
    if (job) return job.promise;
    var l = current, text = src.value;
    keep(l, text);
    var timeout = Math.max(1, +$('timeout').value || 30), seed = String(Math.max(0, Math.floor(+$('seed').value || 0)));
    var scriptArgs = ($('args').value.match(/"[^"]*"|\S+/g) || []).map(function (a) { return a.replace(/^"(.*)"$/, '$1'); });
    // A training run (--retrain, --steps) has no timeout and may write its
    // checkpoint: the files here are the page's own, in memory.
    var training = l.kind === 'lesson' && scriptArgs.some(function (a) { return a === '--retrain' || a === '--steps'; });
    var args = (training ? [] : ['--timeout', String(timeout)]).concat(['--max-memory', MAX_MEMORY, '--seed', seed]);
    if ($('quiet').checked) args.push('-q'); else if ($('values').checked) args.push('--trace=values');
    // the sandbox's rules for a lesson; --compare runs its two scripts its own way
    if (l.kind === 'exercise') args.push('--compare', l.solution, l.path, '--compare-figure', 'images/check_your_work.png');
    else args = (training ? [] : ['--sandbox']).concat(args, ['--report', '/out/report.html', l.path], scriptArgs);
    clearResult();
    setStatus((training ? 'Training with ' + l.path + ' (no timeout: Stop ends it)' : 'Running ' + l.path) + '…', 'busy');
    $('run').disabled = true;
    $('stop').disabled = false;
    var j = job = last = { lesson: l, lines: [], out: [], err: [], t0: performance.now() };
    j.promise = new Promise(function (res) { j.resolve = res; });
    j.w = spare;
    spare = startWorker();   // the next run's, started now
    j.w.ready.then(function (w) {
      if (job !== j) return;
      w.worker.onmessage = function (ev) {
        var m = ev.data;
        if (m.out) {
          take(j, m.out, j.out);
          take(j, m.err, j.err);
          paintLive(j);
        }
        if (m.done) end(j, { rc: m.rc, ms: m.ms, report: m.report, figures: m.figures, written: m.written });
      };
      w.worker.postMessage({ args: args, path: l.path, text: text, training: training });
    }, function (e) { end(j, { rc: 1, ms: 0, figures: [], failed: 'the interpreter failed to start: ' + e.message }); });
    j.w.worker.onerror = function (ev) {
      ev.preventDefault();
      end(j, { rc: 1, ms: performance.now() - j.t0, figures: [], failed: 'the interpreter failed: ' + ev.message });
    };
    // The interpreter stops a runaway Lua loop itself (--timeout); a long C
    // kernel can outlast it, so the page ends the worker a little later.
    if (!training) j.killTimer = setTimeout(function () { stop('timeout: the script ran longer than ' + timeout + ' s (--timeout); the page stopped it'); },
                             timeout * 1000 + 3000);
    return j.promise;
  }
  function stop(why) {
    var j = job;
    if (!j) return;
    var secs = ((performance.now() - j.t0) / 1000).toFixed(2), at = lastLine(j);
    end(j, { rc: 1, stopped: true, ms: performance.now() - j.t0, figures: [],
             failed: (why || 'stopped by you (Stop) after ' + secs + ' s') +
               (at ? ', past line ' + at + ' (the last line its trace shows: ' + j.lesson.path + ':' + at + ')'
                   : j.lines.length ? '' : '; it had printed nothing') });
  }
  function end(j, r) {
    if (job !== j) return;
    clearTimeout(j.killTimer);
    j.w.worker.terminate();
    job = null;
    $('run').disabled = false;
    $('stop').disabled = true;
    (r.written || []).forEach(function (f) { decoded[f.path] = f.bytes; });
    if (r.written && r.written.length) { spare.worker.terminate(); spare = startWorker(); }   // the next run reads them
    warmSpare();
    $('live').textContent = lastLines(j.lines, LIVE_LINES).replace(/\r$/gm, '');   // at once with the status (all of it: terminal output)
    r.stdout = j.out.join('\n');
    r.stderr = j.err.join('\n') + (r.failed ? (j.err.length ? '\n' : '') + r.failed : '');
    show(j.lesson, r).then(function () { j.resolve(r); });
  }
  $('run').addEventListener('click', function () { run(); });
  $('stop').addEventListener('click', function () { stop(); });

  /* ===== the result ===== */
  // An exercise's verdict (lua/compare.lua's print_verdict): its headline, the
  // line it names, the mistake it diagnosed, or the script's own error.
  function exerciseVerdict(text) {
    var lines = text.split('\n'), i = 0, m;
    while (i < lines.length && !/^(\u2717 |\u2713 all|not yet: )/.test(lines[i])) i++;
    if (i === lines.length) return null;
    var head = lines[i], rest = lines.slice(i + 1), detail = lines.slice(i).join('\n');
    if (/^\u2713/.test(head)) return { ok: true, status: head };
    if ((m = /^\u2717 `([^`]+)` does not match \(.*:(\d+)\)$/.exec(head))) {
      var kind = rest.map(function (s) { return /^  ([a-z][a-z0-9_]*): /.exec(s); })
        .filter(function (k) { return k && k[1] !== 'note'; })[0];
      return { status: '\u2717 `' + m[1] + '` (line ' + m[2] + '): ' + (kind ? kind[1] : 'does not match'), line: +m[2], detail: detail };
    }
    if ((m = /^\u2717 your script stopped with an error at .*:(\d+|\?)$/.exec(head))) {
      var msg = rest.filter(function (s) { return !/^ +\d+ \| /.test(s) && !/^  \(/.test(s) && s.trim(); })[0] || '';
      return { status: '\u2717 your script stopped with an error' + (+m[1] ? ' (line ' + m[1] + ')' : '') + ': ' + msg.trim(),
               line: +m[1] || 0, detail: detail, error: true };
    }
    m = /line (\d+)/.exec(head);
    return { status: (/^\u2717/.test(head) ? '' : '\u2717 ') + head, line: m ? +m[1] : 0, detail: detail };
  }
  function showFigures(l, figures) {
    var figs = $('figures');
    figs.hidden = figures.length === 0;
    if (figures.length) figs.appendChild(document.createTextNode('Figures: '));
    figures.forEach(function (f) {
      var type = /\.svg$/.test(f.name) ? 'image/svg+xml' : 'image/png';
      var url = URL.createObjectURL(new Blob([f.bytes], { type: type }));
      urls.push(url);
      if (l.kind === 'exercise') {
        var img = document.createElement('img');
        img.src = url;
        img.alt = f.name;
        figs.appendChild(img);
      }
      var a = document.createElement('a');
      a.href = url;
      a.download = f.name;
      a.textContent = f.name + ' \u2913';
      a.title = 'download images/' + f.name;
      figs.appendChild(a);
    });
  }
  function showWritten(files) {   // a training run's checkpoints: kept for the next runs, and downloadable
    var figs = $('figures');
    if (!files.length) return;
    figs.hidden = false;
    figs.appendChild(document.createTextNode('Written (the next runs read it): '));
    files.forEach(function (f) {
      var a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([f.bytes]));
      urls.push(a.href);
      a.download = f.path.split('/').pop();
      a.textContent = f.path + ' \u2913';
      figs.appendChild(a);
    });
  }
  function showReport(report) {   // resolves once the frame has it
    var frame = $('report');
    return new Promise(function (res) {   // (the printed output stays up until the frame is ready)
      frame.onload = function () { frame.onload = null; frame.hidden = false; $('live').hidden = true; res(); };
      frame.srcdoc = report;
    });
  }
  function offerReport(report) {   // a very large report waits for a click: showing it holds the page
    var b = document.createElement('button');
    b.type = 'button';
    b.className = 'more';
    b.textContent = 'show the full report (' + (report.length / 1048576).toFixed(1) + ' MB; the page may pause)';
    b.addEventListener('click', function () { b.remove(); showReport(report); });
    $('live').before(b);
  }
  // The message of a failed run and the line it names (0: none to mark).
  function errorOf(l, r, v) {
    if (v && !v.ok) return { text: v.detail, line: v.line };
    if (!r.stderr || (l.kind === 'exercise' && r.rc === 0)) return { text: null, line: 0 };
    var m = r.stderr.match(new RegExp(l.path.replace(/[.]/g, '\\.') + ':(\\d+)'));
    // the message; the traceback is in the report below
    var text = r.stderr.replace(/^tensortrace: /, '').split('\nstack traceback:')[0].split('\n').filter(function (s) {
      return !/\r/.test(s); }).join('\n');   // (progress lines redrawn with \r are noise here)
    var line = m && !r.stopped ? +m[1] : 0;
    var opened = /\(to close '\w+' at line (\d+)\)/.exec(text);   // a missing end: the line that needs it
    if (line && opened) line = +opened[1];
    // (the page's memory cap is fixed; the command-line hint does not apply here)
    text = text.replace(/; hint: raise it with --max-memory/, '; the page\u2019s cap is fixed: use smaller sizes here, or tensortrace --max-memory on a computer');
    return { text: text, line: line };
  }
  function nextTask() { return new Promise(function (res) { setTimeout(res, 0); }); }
  // A run's result, in steps that each hold the page briefly: the outcome
  // (status, error and its line, verdict) at once, then the output and the
  // figures, then the report; each step is dropped if a new run began.
  function show(l, r) {
    var gen = shown, here = l === current;
    var secs = (r.ms / 1000).toFixed(2) + ' s', v = l.kind === 'exercise' && !r.failed ? exerciseVerdict(r.stdout) : null;
    if (l.kind === 'exercise' && !r.stopped) $('live').hidden = true;
    if (l.kind === 'exercise') { $('verdict').hidden = !r.stdout; showText($('verdict'), r.stdout); }
    if (r.stopped) setStatus('\u25a0 ' + l.path + ' stopped after ' + secs + '; what it printed is kept below', 'bad');
    else if (r.rc === 0) setStatus('\u2713 ' + l.path + ' ran to the end in ' + secs + (l.kind === 'exercise' ? ': it matches the solution' : ''), 'ok');
    else if (v) setStatus(v.status, 'bad');
    else setStatus('\u2717 ' + l.path + ' stopped with an error after ' + secs, 'bad');
    var e = errorOf(l, r, v);
    if (e.text && !here) e.text = '(in ' + l.path + ', not the lesson in the editor now)\n' + e.text;
    showError(e.text, here ? e.line : 0);
    // where the outcome is: on one column it is below the editor (an error
    // at the bottom of the screen, so the marked line above it shows too);
    // scrolled at the next frame, whose layout it then shares
    requestAnimationFrame(function () {
      if (gen !== shown) return;
      if ($('error').hidden) $('status').scrollIntoView({ block: narrow.matches ? 'start' : 'nearest' });
      else $('error').scrollIntoView({ block: narrow.matches ? 'end' : 'nearest' });
    });
    return nextTask().then(function () {
      if (gen !== shown) return;
      showText($('stdout'), r.stdout + (r.stderr ? '\n' + r.stderr : ''));
      showFigures(l, r.figures);
      showWritten(r.written || []);
      return nextTask();
    }).then(function () {
      if (gen !== shown || !r.report) return;
      if (r.report.length > REPORT_BYTES) offerReport(r.report);
      else return showReport(r.report);
    });
  }

  window.tt_page = { run: run, stop: stop, open: open, busy: function () { return !!job; },
                     running: function () { return last && last.promise; }, warm: function () { return !!spare.warm; } };
  var asked = params.get('lesson'), found = open(asked || store.get('lesson') || L.lessons[0].name);
  var LOADING = 'Loading the interpreter\u2026';
  if (asked !== null && !found)
    setStatus('There is no lesson named \u201c' + asked + '\u201d: ' + current.path + ' is shown instead.', 'bad');
  else setStatus(LOADING, 'busy');
  spare.ready.then(function () {
    if (!job && $('status').textContent === LOADING) setStatus('Ready: pick a lesson, edit it, press Run (nothing leaves this page).');
  });
  openLink().then(function () { if (params.get('run') === '1') run(); });
})();
