// Live pages: while work is in flight (`<main data-live>`), the parts of the page marked
// `data-live-part` are fetched again and swapped in place, so staff see a receipt reach
// `fulfilled` or a scribe's reply arrive without reloading. Forms are outside those parts
// and are never touched. "until-settled" pages stop once the server stops marking them.
// While an answer is being written the server asks for a quicker pace (`data-live-every`, ms).
// A page nobody can see (a background tab, a minimised window) asks the server nothing, and
// refreshes the moment it is shown again.
(function () {
  'use strict';
  var main = document.querySelector('main[data-live]');
  if (!main) return;
  var INTERVAL_MS = 1500;

  function refresh() {
    fetch(window.location.href, { credentials: 'same-origin', headers: { 'X-Live-Refresh': '1' } })
      .then(function (res) {
        return res.ok ? res.text() : null;
      })
      .then(function (html) {
        if (html === null) return schedule();
        var next = new DOMParser().parseFromString(html, 'text/html').querySelector('main');
        if (!next) return schedule();
        document.querySelectorAll('[data-live-part]').forEach(function (part) {
          var fresh = next.querySelector('[data-live-part="' + part.getAttribute('data-live-part') + '"]');
          if (fresh) keepOpenState(part, fresh);
          if (fresh && fresh.innerHTML !== part.innerHTML) part.replaceWith(document.importNode(fresh, true));
        });
        var every = next.getAttribute('data-live-every');
        if (every) main.setAttribute('data-live-every', every);
        else main.removeAttribute('data-live-every');
        if (next.hasAttribute('data-live')) schedule();
        else main.removeAttribute('data-live');
      })
      .catch(schedule);
  }

  // A <details> staff opened or closed stays so when its part is swapped; new ones open as the server says.
  function keepOpenState(part, fresh) {
    fresh.querySelectorAll('details[id]').forEach(function (details) {
      var shown = document.getElementById(details.id);
      if (shown && part.contains(shown)) details.open = shown.open;
    });
  }

  function refreshWhenShown() {
    if (!document.hidden) return refresh();
    document.addEventListener('visibilitychange', function shown() {
      if (document.hidden) return;
      document.removeEventListener('visibilitychange', shown);
      refresh();
    });
  }

  function schedule() {
    window.setTimeout(refreshWhenShown, Number(main.getAttribute('data-live-every')) || INTERVAL_MS);
  }

  schedule();
})();
