/* harness.js — injected first into the <head> of a copy of a report page by
   tests/browser/run.sh. It records every error the page raises (scripts,
   images or styles that fail to load, console.error), then, once the page
   has loaded, checks it as a reader would use it and writes one line a
   check ("PASS name" / "FAIL name: why") into a pre element with the id
   tt-results, which chromium --dump-dom prints. In a frame (the phone
   width: headless windows are at least 500 px wide, a frame is not) the
   lines go to the parent page, which shows them. */
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    errors.push(e.message || ('cannot load ' + String(t.src || t.href || t.tagName).slice(0, 60)));
  }, true);
  var consoleError = console.error;
  console.error = function () {
    errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };

  /* shown: laid out and not skipped (a closed <details> keeps its content's
     boxes but hides them with content-visibility) */
  function visible(el) { return el.getClientRects().length > 0 && (!el.checkVisibility || el.checkVisibility()); }
  function height(el) { return el.getBoundingClientRect().height; }

  window.addEventListener('load', function () {
    var out = [];
    function check(name, ok, why) { out.push((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': ' + why)); }
    try {
      checks(check);
    } catch (e) {
      check('the checks run to the end', false, e + ' ' + e.stack);
    }
    var pre = document.createElement('pre');
    pre.id = 'tt-results';
    pre.textContent = '\n' + out.join('\n') + '\n';
    document.body.appendChild(pre);
    if (window.parent !== window) window.parent.postMessage(pre.textContent, '*');
  });

  function checks(check) {
    var imgs = Array.prototype.slice.call(document.images);
    var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
    check('every image loads (' + imgs.length + ' images, ' + document.querySelectorAll('figure svg').length +
          ' inline SVG)', broken.length === 0, broken.map(function (i) { return i.alt; }).join(', '));

    var fetched = performance.getEntriesByType('resource').map(function (r) { return r.name; });
    check('nothing fetched (no network, no external file)', fetched.length === 0, fetched.join(', '));

    var groups = document.querySelectorAll('details.g');
    if (groups.length) {
      var g = groups[0], rows = g.querySelector('.rows'), summary = g.querySelector('summary');
      // a group off screen is laid out only when scrolled to (content-visibility:
      // auto), its height a placeholder till then: measure it laid out, as a
      // reader who clicks its header sees it
      g.style.contentVisibility = 'visible';
      var tall = height(g), before = g.open && visible(rows);
      summary.click();
      var closed = !g.open && !visible(rows) && height(g) < tall;
      summary.click();
      var reopened = g.open && visible(rows) && height(g) === tall;
      check('a click on a group header toggles it (' + groups.length + ' groups)', before && closed && reopened,
            'open ' + before + ', after a click ' + !closed + ', after two ' + reopened);
      var button = document.getElementById('toggle');
      button.click();
      var allClosed = Array.prototype.every.call(groups, function (d) { return !d.open; });
      button.click();
      var allOpen = Array.prototype.every.call(groups, function (d) { return d.open; });
      check('"Collapse all" then "Expand all"', !button.hidden && allClosed && allOpen,
            'hidden ' + button.hidden + ', all closed ' + allClosed + ', all open ' + allOpen);
      g.open = false;
      window.dispatchEvent(new Event('beforeprint'));
      var printed = Array.prototype.every.call(groups, function (d) { return d.open; });
      window.dispatchEvent(new Event('afterprint'));
      var restored = !g.open;
      g.open = true;
      check('printing unfolds every group, and folds back after', printed && restored,
            'all open for print ' + printed + ', folded back ' + restored);
    }

    var anchors = Array.prototype.slice.call(document.querySelectorAll('a[href^="#"]'));
    var dangling = anchors.filter(function (a) { return !document.getElementById(a.getAttribute('href').slice(1)); });
    check('contents links reach their sections (' + anchors.length + ')', dangling.length === 0,
          dangling.map(function (a) { return a.textContent; }).join(', '));

    var width = document.documentElement.clientWidth, wide = document.documentElement.scrollWidth;
    check('no sideways scrolling of the page at ' + window.innerWidth + ' px', wide <= width,
          'the page is ' + wide + ' px wide in a ' + width + ' px window');

    var h1 = document.querySelector('h1');
    check('a title', h1 && h1.textContent.trim().length > 0, 'no <h1> text');

    check('no errors on the console', errors.length === 0, errors.join(' | '));
  }
})();
