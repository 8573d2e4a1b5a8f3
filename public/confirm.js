// Destructive buttons ask first: a form (or the button that sends it) with
// `data-confirm="question"` is sent only if the person confirms. Without scripts the form is
// sent as it is; the server checks everything either way.
(function () {
  'use strict';
  document.addEventListener('submit', function (event) {
    var button = event.submitter;
    var question = (button && button.getAttribute('data-confirm')) || event.target.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
