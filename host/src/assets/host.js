// The dashboard's live updates: /events sends HTML rendered (and escaped)
// by the host; this puts it in place. Served as a file so the pages'
// Content-Security-Policy allows no inline script.
(function () {
  'use strict';
  var table = document.getElementById('bots');
  if (table) {
    var es = new EventSource('/events');
    es.addEventListener('bots', function (e) {
      var t = document.createElement('tbody');
      t.innerHTML = e.data;
      Array.prototype.slice.call(t.children).forEach(function (row) {
        var old = document.getElementById(row.id);
        if (old) { old.replaceWith(row); } else { table.querySelector('tbody').appendChild(row); }
      });
      var count = document.getElementById('count');
      if (count) { count.textContent = table.querySelectorAll('tbody tr').length; }
    });
    es.addEventListener('quota', function (e) {
      var quota = document.getElementById('quota');
      if (quota) { quota.innerHTML = e.data; }
    });
    return;
  }
  var title = document.querySelector('h1[data-bot]');
  if (!title) { return; }
  var stream = new EventSource('/events?bot=' + encodeURIComponent(title.getAttribute('data-bot')));
  stream.addEventListener('card', function (e) {
    var d = document.createElement('div');
    d.innerHTML = e.data;
    var card = document.getElementById('card');
    if (card && d.firstElementChild) { card.replaceWith(d.firstElementChild); }
  });
  stream.addEventListener('log', function (e) {
    var u = document.createElement('ul');
    u.innerHTML = e.data;
    var log = document.getElementById('log');
    if (!log || !u.firstElementChild) { return; }
    log.insertBefore(u.firstElementChild, log.firstChild);
    var max = parseInt(log.getAttribute('data-max'), 10) || 100;
    while (log.children.length > max) { log.removeChild(log.lastChild); }
  });
})();
