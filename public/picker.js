// Relationship pickers on the entry form (views/entries/picker.ejs): typing in the search
// box asks the console for the target type's entries whose name holds the text and offers
// them as an ARIA combobox's listbox; picking one adds it to the field's links as a checked
// checkbox and empties the box. Without this script the box still works: what is typed
// (an id or an exact name) is looked up when the form is saved.
(function () {
  'use strict';
  var DEBOUNCE_MS = 150;

  document.querySelectorAll('[data-picker]').forEach(setUp);

  function setUp(picker) {
    var input = picker.querySelector('[role="combobox"]');
    var list = picker.querySelector('[role="listbox"]');
    var picked = picker.querySelector('[data-picked]');
    var url = picker.getAttribute('data-options');
    var name = picker.getAttribute('data-name');
    var timer = null;
    var asked = 0;
    var active = -1;

    function options() {
      return list.querySelectorAll('[role="option"][data-id]');
    }

    function close() {
      list.hidden = true;
      input.setAttribute('aria-expanded', 'false');
      input.removeAttribute('aria-activedescendant');
      active = -1;
    }

    function show(entries) {
      list.replaceChildren();
      entries.forEach(function (entry, i) {
        var option = document.createElement('li');
        option.setAttribute('role', 'option');
        option.id = list.id + '-' + i;
        option.setAttribute('data-id', entry.id);
        option.setAttribute('aria-selected', 'false');
        option.textContent = entry.title || entry.id;
        list.appendChild(option);
      });
      if (entries.length === 0) {
        var none = document.createElement('li');
        none.className = 'picker-none';
        none.setAttribute('role', 'option');
        none.setAttribute('aria-disabled', 'true');
        none.textContent = 'No entry matches “' + input.value.trim() + '”';
        list.appendChild(none);
      }
      list.hidden = false;
      input.setAttribute('aria-expanded', 'true');
      active = -1;
    }

    function search() {
      var ask = ++asked;
      fetch(url + '?q=' + encodeURIComponent(input.value), { credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then(function (res) {
          return res.ok ? res.json() : null;
        })
        .then(function (body) {
          // Only the answer to the latest question is shown.
          if (body && ask === asked && document.activeElement === input) show(body.entries);
        })
        .catch(function () {});
    }

    function highlight(index) {
      var all = options();
      if (all.length === 0) return;
      active = (index + all.length) % all.length;
      all.forEach(function (option, i) {
        option.setAttribute('aria-selected', i === active ? 'true' : 'false');
      });
      input.setAttribute('aria-activedescendant', all[active].id);
      all[active].scrollIntoView({ block: 'nearest' });
    }

    function choose(option) {
      var id = option.getAttribute('data-id');
      var existing = Array.prototype.find.call(picked.querySelectorAll('input[type="checkbox"]'), function (box) {
        return box.value === id;
      });
      if (existing) {
        existing.checked = true;
      } else {
        var item = document.createElement('li');
        var label = document.createElement('label');
        var box = document.createElement('input');
        box.type = 'checkbox';
        box.name = name;
        box.value = id;
        box.checked = true;
        label.append(box, ' ' + option.textContent);
        item.appendChild(label);
        picked.appendChild(item);
      }
      input.value = '';
      close();
    }

    input.addEventListener('input', function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(search, DEBOUNCE_MS);
    });
    input.addEventListener('keydown', function (event) {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        if (list.hidden) return search();
        highlight(active + (event.key === 'ArrowDown' ? 1 : -1));
      } else if (event.key === 'Enter' && !list.hidden && active >= 0) {
        event.preventDefault();
        choose(options()[active]);
      } else if (event.key === 'Escape' && !list.hidden) {
        event.preventDefault();
        close();
      }
    });
    input.addEventListener('blur', close);
    // mousedown, not click: a click would blur the box (and close the list) first.
    list.addEventListener('mousedown', function (event) {
      var option = event.target.closest('[role="option"][data-id]');
      event.preventDefault();
      if (option) choose(option);
    });
  }
})();
