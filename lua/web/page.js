/* page.js — the page of make web: pick a lesson, edit it, run it in the
   interpreter compiled to WebAssembly (tensortrace.js), read the run as the
   --report page shows it. Each run is a fresh Web Worker holding one
   instance of the interpreter, started from this page's own copy of
   tensortrace.js (a Blob, so file:// works): Stop, or a script that ignores
   --timeout inside a long C kernel, ends the worker, and the page stays. */
'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var L = window.TT_LESSONS, params = new URLSearchParams(location.search);
  var byName = {};
  L.lessons.forEach(function (l) { byName[l.name] = l; });
  var store = {   // localStorage, when the browser allows it (file:// may not)
    get: function (k) { try { return localStorage.getItem('tensortrace:' + k); } catch (e) { return null; } },
    set: function (k, v) { try { localStorage.setItem('tensortrace:' + k, v); } catch (e) { /* private mode */ } },
    del: function (k) { try { localStorage.removeItem('tensortrace:' + k); } catch (e) { /* private mode */ } }
  };
  var MAX_MEMORY = '1G';   /* the sandbox's default (--sandbox) */
  var src = $('src'), gutter = $('gutter'), mark = $('mark');
  var current = null, worker = null, killTimer = null, running = null, last = null, urls = [];

  /* ===== the lesson picker ===== */
  var groups = { lesson: document.createElement('optgroup'), exercise: document.createElement('optgroup') };
  groups.lesson.label = 'Lessons';
  groups.exercise.label = 'Exercises (Run checks your work against the solution)';
  L.lessons.forEach(function (l) {
    var o = document.createElement('option');
    o.value = l.name;
    o.textContent = l.name.replace(/^exercises\//, 'exercise ').replace(/_/g, ' ');
    o.title = l.about;
    groups[l.kind].appendChild(o);
  });
  $('lesson').appendChild(groups.lesson);
  if (groups.exercise.children.length) $('lesson').appendChild(groups.exercise);

  function original(l) { return L.files[l.path].text; }
  function open(name) {
    var l = byName[name] || L.lessons[0];
    current = l;
    $('lesson').value = l.name;
    $('about').textContent = l.about;
    var saved = store.get('src:' + l.name);
    src.value = saved !== null ? saved : original(l);
    store.set('lesson', l.name);
    showError(null);
    numberLines();
  }
  $('lesson').addEventListener('change', function () { open(this.value); });
  $('reset').addEventListener('click', function () {
    store.del('src:' + current.name);
    src.value = original(current);
    showError(null);
    numberLines();
  });

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
    store.set('src:' + current.name, src.value);
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

  function showError(text, line) {
    var box = $('error');
    box.hidden = !text;
    box.textContent = text || '';
    mark.hidden = !line;
    if (line) {
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
  }

  /* ===== options ===== */
  var opts = ['values', 'quiet'];
  opts.forEach(function (id) {
    $(id).checked = store.get('opt:' + id) === '1';
    $(id).addEventListener('change', function () { store.set('opt:' + id, this.checked ? '1' : '0'); });
  });
  ['seed', 'timeout'].forEach(function (id) {
    if (store.get('opt:' + id)) $(id).value = store.get('opt:' + id);
    $(id).addEventListener('change', function () { store.set('opt:' + id, this.value); });
  });

  /* ===== running ===== */
  // The worker: one interpreter instance, one run, then it is thrown away.
  function workerMain() {
    self.onmessage = function (ev) {
      var job = ev.data, out = [], err = [], rc = 0;
      createTensortrace({
        noInitialRun: true,
        thisProgram: 'tensortrace',
        print: function (s) { out.push(s); },
        printErr: function (s) { err.push(s); },
        quit: function (status, e) { throw e; },
        preRun: [function (M) { Object.keys(job.env).forEach(function (k) { M.ENV[k] = job.env[k]; }); }]
      }).then(function (M) {
        M.FS.mkdir('/w');
        M.FS.mkdir('/out');
        Object.keys(job.files).forEach(function (p) {
          var parts = p.split('/'), dir = '/w';
          for (var i = 0; i < parts.length - 1; i++) {
            dir += '/' + parts[i];
            try { M.FS.mkdir(dir); } catch (e) { /* there already */ }
          }
          M.FS.writeFile('/w/' + p, job.files[p]);
        });
        try { M.FS.mkdir('/w/images'); } catch (e) { /* there already */ }
        M.FS.chdir('/w');
        var t0 = performance.now();
        try { rc = M.callMain(job.args); } catch (e) { rc = e && e.status !== undefined ? e.status : (err.push(String(e)), 1); }
        var ms = performance.now() - t0, figures = [], report = null;
        M.FS.readdir('/w/images').forEach(function (n) {
          if (n !== '.' && n !== '..') figures.push({ name: n, bytes: M.FS.readFile('/w/images/' + n) });
        });
        try {   // (emscripten's umask is 0777: the report is written with mode 0)
          M.FS.chmod('/out/report.html', 420);
          report = M.FS.readFile('/out/report.html', { encoding: 'utf8' });
        } catch (e) { /* no report: the script did not start */ }
        self.postMessage({ rc: rc, ms: ms, stdout: out.join('\n'), stderr: err.join('\n'), report: report, figures: figures });
      });
    };
  }
  var workerURL = URL.createObjectURL(new Blob(['var _scriptDir;\nvar createTensortrace = ' +
    createTensortrace.toString() + ';\n(' + workerMain.toString() + ')();\n'], { type: 'text/javascript' }));

  function decode(f) {
    if (f.text !== undefined) return new TextEncoder().encode(f.text);
    var s = atob(f.base64), b = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }
  function setStatus(text, cls) { $('status').textContent = text; $('status').className = 'status ' + (cls || ''); }

  function finish(result) {
    clearTimeout(killTimer);
    if (worker) worker.terminate();
    worker = null;
    $('run').disabled = false;
    $('stop').disabled = true;
    var r = running;
    running = null;
    if (r) r.resolve(result);
  }

  function run() {
    if (worker) return running.promise;
    var l = current, files = {};
    Object.keys(L.files).forEach(function (p) { files[p] = decode(L.files[p]); });
    files[l.path] = new TextEncoder().encode(src.value);
    store.set('src:' + l.name, src.value);
    var timeout = Math.max(1, +$('timeout').value || 30), seed = String(Math.max(0, Math.floor(+$('seed').value || 0)));
    var args = ['--timeout', String(timeout), '--max-memory', MAX_MEMORY, '--seed', seed];
    if ($('quiet').checked) args.push('-q'); else if ($('values').checked) args.push('--trace=values');
    // the sandbox's rules for a lesson; --compare runs its two scripts its own way
    if (l.kind === 'exercise') args.push('--compare', l.solution, l.path, '--compare-figure', 'images/check_your_work.png');
    else args.unshift('--sandbox'), args.push('--report', '/out/report.html', l.path);
    var env = {};
    if (params.get('times') === '0') env.TT_TRACE_NO_TIMES = '1';   /* the tests compare traces without timings */
    showError(null);
    setStatus('Running ' + l.path + '…', 'busy');
    $('run').disabled = true;
    $('stop').disabled = false;
    var p = {};
    p.promise = new Promise(function (res) { p.resolve = res; });
    running = last = p;
    var t0 = performance.now();
    worker = new Worker(workerURL);
    worker.onmessage = function (ev) { show(l, ev.data).then(function () { finish(ev.data); }); };
    worker.onerror = function (ev) {
      ev.preventDefault();
      var r = { rc: 1, stdout: '', stderr: 'the interpreter failed: ' + ev.message, figures: [], ms: performance.now() - t0 };
      show(l, r).then(function () { finish(r); });
    };
    // The interpreter stops a runaway Lua loop itself (--timeout); a long C
    // kernel can outlast it, so the page ends the worker a little later.
    killTimer = setTimeout(function () { stop('timeout: the script ran longer than ' + timeout + ' s (--timeout); the page stopped it'); },
                           timeout * 1000 + 3000);
    worker.postMessage({ args: args, env: env, files: files });
    return p.promise;
  }
  function stop(why) {
    if (!worker) return;
    var r = { rc: 1, stopped: true, stdout: '', stderr: why || 'stopped by you (Stop)', figures: [] };
    setStatus('Stopped.', 'bad');
    showError(r.stderr);
    finish(r);
  }
  $('run').addEventListener('click', function () { run(); });
  $('stop').addEventListener('click', function () { stop(); });

  function show(l, r) {
    urls.forEach(URL.revokeObjectURL);
    urls = [];
    $('stdout').textContent = r.stdout + (r.stderr ? '\n' + r.stderr : '');
    var frame = $('report'), shown = Promise.resolve();
    frame.hidden = !r.report;
    if (r.report) {   // the run counts as shown once the frame has the report
      shown = new Promise(function (res) { frame.onload = res; });
      frame.srcdoc = r.report;
    }
    var v = $('verdict');
    v.hidden = l.kind !== 'exercise';
    if (l.kind === 'exercise') v.textContent = r.stdout;
    var figs = $('figures');
    figs.textContent = '';
    figs.hidden = r.figures.length === 0;
    if (r.figures.length) figs.appendChild(document.createTextNode('Figures: '));
    r.figures.forEach(function (f) {
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
    var secs = (r.ms / 1000).toFixed(2) + ' s';
    var verdictOk = l.kind === 'exercise' ? r.rc === 0 : true;
    if (r.rc === 0) setStatus('\u2713 ' + l.path + ' ran to the end in ' + secs + (l.kind === 'exercise' ? ': it matches the solution' : ''), 'ok');
    else if (l.kind === 'exercise' && r.rc === 1 && !r.stderr) setStatus('\u2717 not yet: ' + (r.stdout.split('\n')[0] || ''), 'bad');
    else setStatus('\u2717 ' + l.path + ' stopped with an error after ' + secs, 'bad');
    if (r.stderr && !(verdictOk && r.rc === 0)) {
      var m = r.stderr.match(new RegExp(l.path.replace(/[.]/g, '\\.') + ':(\\d+):'));
      // the message; the traceback is in the report below
      showError(r.stderr.replace(/^tensortrace: /, '').split('\nstack traceback:')[0], m ? +m[1] : 0);
    }
    return shown;
  }

  window.tt_page = { run: run, stop: stop, open: open, running: function () { return last && last.promise; } };
  open(params.get('lesson') || store.get('lesson') || L.lessons[0].name);
  setStatus('Ready: pick a lesson, edit it, press Run (nothing leaves this page).');
  if (params.get('run') === '1') run();
})();
