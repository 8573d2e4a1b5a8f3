// The sign-in form carries the browser's time zone, so the console can write times in it
// from the first page on (the server keeps it only for a user who has none yet).
(function () {
  'use strict';
  var field = document.querySelector('form input[name="time_zone"]');
  if (!field) return;
  try {
    field.value = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  } catch (_err) {
    field.value = '';
  }
})();
