// Copy buttons: a `<button data-copy="text">` puts its text on the clipboard and says
// "Copied" for a moment (its live region tells screen readers). Where the Clipboard API is
// missing (plain HTTP off loopback is not a secure context) a hidden textarea is copied from.
(function () {
  'use strict';
  var SHOWN_MS = 2000;

  function fallback(text) {
    var area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'visually-hidden';
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try {
      ok = document.execCommand('copy');
    } catch (_err) {
      ok = false;
    }
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error('copy refused'));
  }

  function show(button, text) {
    var state = button.querySelector('.copy-state');
    state.textContent = text;
    button.classList.toggle('copied', text === 'Copied');
    clearTimeout(button.copyTimer);
    button.copyTimer = setTimeout(function () {
      state.textContent = 'Copy';
      button.classList.remove('copied');
    }, SHOWN_MS);
  }

  document.addEventListener('click', function (event) {
    var button = event.target.closest && event.target.closest('button[data-copy]');
    if (!button) return;
    var text = button.getAttribute('data-copy');
    var copy = navigator.clipboard && window.isSecureContext ? navigator.clipboard.writeText(text) : fallback(text);
    copy.then(
      function () {
        show(button, 'Copied');
      },
      function () {
        show(button, 'Select and copy');
      },
    );
  });
})();
