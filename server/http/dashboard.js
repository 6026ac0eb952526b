// The dashboard pages of axqc-server (docs/report-html.md): "/" (pass rate over time, top failing
// rules, every check with paging, filters and a search, the webhook deliveries) and
// "/models/{sha256}" (the stored report as the HTML report, the model's stored reports and its
// check history). Data come from the JSON API (/v1/stats, /v1/checks, /v1/deliveries,
// /v1/models/{sha256}/reports, /v1/reports/{sha256}/html) with the bearer token kept in this
// browser's localStorage when the server asks for one. No external resources; data are written
// with textContent and attributes only, never as HTML.
(function () {
  'use strict';
  var TOKEN_KEY = 'axqc-token';
  var NS = 'http://www.w3.org/2000/svg';

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgEl(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function num(v) { return v === undefined || v === null ? 0 : Number(v); }

  // fetch with the token; a 401 asks for one.
  function api(path) {
    var headers = {};
    var token = localStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    return fetch(path, {headers: headers}).then(function (r) {
      if (r.status === 401) { askToken(); throw new Error('the server needs a token'); }
      if (!r.ok) {
        return r.text().then(function (t) {
          var msg = r.status + ' ' + r.statusText;
          try { msg = JSON.parse(t).error.message; } catch (e) { /* not JSON */ }
          throw new Error(msg);
        });
      }
      return r;
    });
  }
  function askToken() {
    var box = $('token-box');
    if (!box) return;
    box.hidden = false;
    $('token-save').onclick = function () {
      localStorage.setItem(TOKEN_KEY, $('token').value.trim());
      location.reload();
    };
  }
  function fail(where, err) {
    var p = $(where);
    if (p) { p.textContent = ''; el('p', {'class': 'error'}, p, String(err.message || err)); }
  }

  // ---- "/" ----
  var WINDOWS = {'1d': '1h', '7d': '6h', '30d': '1d'};

  function chart(series, title) {
    var box = $('chart');
    box.textContent = '';
    var W = 760, H = 240, L = 44, R = 36, T = 14, B = 34;  // R: room for the last time label
    var svg = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart', role: 'img',
                            'aria-label': title}, box);
    var n = series.length;
    function x(i) { return L + (n <= 1 ? 0 : i * (W - L - R) / (n - 1)); }
    function y(v) { return T + (1 - v) * (H - T - B); }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      svgEl('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), 'class': 'grid'}, svg);
      var t = svgEl('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'class': 'axis'}, svg);
      t.textContent = Math.round(v * 100) + '%';
    });
    var pts = [], withData = 0;
    series.forEach(function (b, i) {
      var c = b.counts || {};
      if (i % Math.max(1, Math.ceil(n / 8)) === 0) {
        var t = svgEl('text', {x: x(i), y: H - 12, 'text-anchor': 'middle', 'class': 'axis'}, svg);
        var d = new Date(b.start);
        t.textContent = (d.getUTCMonth() + 1) + '-' + d.getUTCDate() + ' ' +
                        String(d.getUTCHours()).padStart(2, '0') + 'h';
      }
      if (c.pass_rate === undefined || c.pass_rate === null) return;
      pts.push([x(i), y(num(c.pass_rate)), b, c]);
    });
    if (pts.length > 1) {
      svgEl('polyline', {points: pts.map(function (p) { return p[0] + ',' + p[1]; }).join(' '),
                         'class': 'line'}, svg);
    }
    pts.forEach(function (p) {
      var dot = svgEl('circle', {cx: p[0], cy: p[1], r: 4, 'class': 'point',
                                 'data-requests': num(p[3].requests),
                                 'data-pass-rate': p[3].pass_rate}, svg);
      var tip = svgEl('title', {}, dot);
      tip.textContent = p[2].start + ': ' + Math.round(num(p[3].pass_rate) * 1000) / 10 +
                        '% pass (' + num(p[3].conformant) + ' conformant, ' +
                        num(p[3].non_conformant) + ' non-conformant)';
      withData++;
    });
    if (withData === 0) {
      var t = svgEl('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle', 'class': 'axis'}, svg);
      t.textContent = 'no checks in this window';
    }
  }

  function loadStats() {
    var win = $('window').value, key = $('label-key').value.trim(), value = $('label-value').value;
    var q = 'window=' + win + '&step=' + WINDOWS[win] + '&top_rules=10';
    if (key) q += '&group_by=' + encodeURIComponent(key);
    if (key && value !== '*') q += '&label.' + encodeURIComponent(key) + '=' + encodeURIComponent(value);
    api('/v1/stats?' + q).then(function (r) { return r.json(); }).then(function (s) {
      var total = s.total || {};
      $('summary').textContent = num(total.requests) + ' checks, ' + num(total.conformant) +
          ' conformant, ' + num(total.non_conformant) + ' non-conformant' +
          (total.pass_rate === undefined || total.pass_rate === null ? ''
              : ', pass rate ' + Math.round(num(total.pass_rate) * 1000) / 10 + '%');
      chart(s.series || [], 'pass rate over time');
      if (key && value === '*') {
        var sel = $('label-value');
        while (sel.options.length > 1) sel.remove(1);
        (s.groups || []).forEach(function (g) {
          el('option', {value: g.label_value}, sel, g.label_value === '' ? '(no label)' : g.label_value);
        });
      }
      var body = $('rules-body');
      body.textContent = '';
      (s.top_failing_rules || []).forEach(function (r) {
        var tr = el('tr', {'class': 'rule-row', 'data-rule': r.rule}, body);
        el('td', {'class': 'mono'}, tr, r.rule);
        el('td', {'class': 'n'}, tr, num(r.requests));
        el('td', {'class': 'n'}, tr, num(r.models));
        el('td', {'class': 'n'}, tr, num(r.findings));
      });
      if (!(s.top_failing_rules || []).length) {
        el('td', {colspan: 4, 'class': 'small'}, el('tr', {}, body), 'no failing rules');
      }
    }).catch(function (e) { fail('chart', e); });
  }

  // An error in place of a table's rows.
  function failRow(body, columns, err) {
    var b = $(body);
    if (!b) return;
    b.textContent = '';
    el('td', {colspan: columns, 'class': 'error'}, el('tr', {}, b), String(err.message || err));
  }
  function time(t) { return (t || '').replace('T', ' ').replace(/\.\d+Z$/, 'Z'); }

  // The options of a check or report as a person reads them ("check_value, target ax650").
  function optionsText(v) {
    var key = v.options || '', parts = [];
    if (v.check_value) parts.push('check_value');
    if ((v.targets || []).length) parts.push('target ' + v.targets.join(','));
    var ml = /(?:^|;)ml=(\d+)/.exec(key);
    if (ml && ml[1] !== '5') parts.push('max_locations ' + ml[1]);
    if (/(?:^|;)p2=/.test(key)) parts.push('pulsar2 config');
    return parts.length ? parts.join(', ') : 'defaults';
  }
  // The page of a check's report: /models/{sha256}?<its options> (from the server).
  function modelPage(v) {
    if (v.model_page) return v.model_page;
    return v.sha256 ? '/models/' + encodeURIComponent(v.sha256) : null;
  }
  function labelsText(labels) {
    return Object.keys(labels || {}).sort().map(function (k) { return k + '=' + labels[k]; }).join(' ');
  }
  function verdictCell(tr, verdict) {
    el('span', {'class': 'verdict verdict-' + verdict}, el('td', {}, tr), verdict);
  }

  // A paged table of GET /v1/checks: `query()` gives the filters, `ids` the element ids of the
  // table body, pager buttons and page text. load() and reload() return a promise of the filled
  // table; bind() sets the pager's handlers again (after document.open() erased them).
  function checksTable(ids, query, pageSize, emptyText, firstOffset) {
    var offset = firstOffset || 0, last = null;
    function bind() {
      if (!last) return;
      var m = last;
      $(ids.next).onclick = function () { offset = num(m.next_offset); load(); };
      $(ids.prev).onclick = function () { offset = Math.max(0, offset - pageSize); load(); };
    }
    function load() {
      var q = query() + (query() ? '&' : '') + 'limit=' + pageSize + '&offset=' + offset;
      return api('/v1/checks?' + q).then(function (r) { return r.json(); }).then(function (m) {
        var body = $(ids.body);
        body.textContent = '';
        var checks = m.checks || [], total = num(m.total);
        checks.forEach(function (v) {
          var tr = el('tr', {'class': 'check-row', 'data-sha256': v.sha256, 'data-verdict': v.verdict,
                             'data-request-id': v.request_id, 'data-source': v.source}, body);
          el('td', {}, tr, time(v.time));
          var name = v.name || (v.sha256 ? v.sha256.slice(0, 12) : '(no model)');
          var link = modelPage(v), td = el('td', {}, tr);
          if (link) {
            var a = el('a', {href: link, 'class': 'report-link'}, td, name);
            a.title = v.sha256 + (v.report_query ? '?' + v.report_query : '');
          } else {
            td.textContent = name;
          }
          el('td', {}, tr, v.source);
          verdictCell(tr, v.verdict);
          el('td', {'class': 'n'}, tr, num(v.errors));
          el('td', {'class': 'n'}, tr, num(v.warnings));
          el('td', {'class': 'small'}, tr, labelsText(v.labels));
          el('td', {'class': 'small options'}, tr, optionsText(v));
        });
        if (!checks.length) el('td', {colspan: 8, 'class': 'small'}, el('tr', {}, body), emptyText);
        $(ids.page).textContent = total === 0 ? '0 checks'
            : !checks.length ? 'none from ' + (offset + 1) + ' on (' + total + ' checks)'
            : (offset + 1) + '\u2013' + (offset + checks.length) + ' of ' + total + ' checks';
        $(ids.page).setAttribute('data-total', total);
        $(ids.prev).disabled = offset === 0;
        $(ids.next).disabled = m.next_offset === undefined;
        last = m;
        bind();
      }).catch(function (e) { failRow(ids.body, 8, e); });
    }
    return {reload: function () { offset = 0; return load(); }, load: load, bind: bind};
  }

  // GET /v1/deliveries, paged by cursor (older) with the cursors of the pages seen (newer).
  function deliveriesTable() {
    var cursors = [''];
    function load() {
      var q = 'limit=20', src = $('deliveries-source').value, out = $('deliveries-outcome').value;
      if (src) q += '&source=' + encodeURIComponent(src);
      if (out) q += '&outcome=' + encodeURIComponent(out);
      var cursor = cursors[cursors.length - 1];
      if (cursor) q += '&cursor=' + encodeURIComponent(cursor);
      api('/v1/deliveries?' + q).then(function (r) { return r.json(); }).then(function (j) {
        var body = $('deliveries-body');
        body.textContent = '';
        var list = j.deliveries || [];
        list.forEach(function (d) {
          var tr = el('tr', {'class': 'delivery-row', 'data-delivery-id': d.delivery_id,
                             'data-state': d.state, 'data-outcome': d.outcome || ''}, body);
          el('td', {}, tr, time(d.created_time));
          el('td', {}, tr, d.source);
          el('td', {'class': 'mono'}, tr, d.model);
          el('td', {'class': 'mono small'}, tr, (d.revision || '').slice(0, 16));
          el('td', {'class': d.state === 'failed' ? 'outcome-failed' : d.state === 'done' ? 'outcome-done' : ''},
             tr, d.state);
          el('td', {}, tr, d.outcome || '');
          el('td', {'class': 'n'}, tr, num(d.attempts));
          el('td', {'class': 'err'}, tr, d.error || '');
          el('td', {'class': 'mono small'}, tr, d.request_id || '');
          var td = el('td', {}, tr);
          if (d.model_page) el('a', {href: d.model_page, 'class': 'report-link'}, td, 'report');
        });
        if (!list.length) el('td', {colspan: 10, 'class': 'small'}, el('tr', {}, body), 'no deliveries');
        $('deliveries-page').textContent = 'page ' + cursors.length;
        $('deliveries-prev').disabled = cursors.length === 1;
        $('deliveries-next').disabled = !j.next_cursor;
        $('deliveries-next').onclick = function () { cursors.push(j.next_cursor); load(); };
        $('deliveries-prev').onclick = function () { cursors.pop(); load(); };
      }).catch(function (e) {
        var body = $('deliveries-body');
        body.textContent = '';
        el('td', {colspan: 10, 'class': 'small'}, el('tr', {}, body), String(e.message || e));
        $('deliveries-prev').disabled = $('deliveries-next').disabled = true;
      });
    }
    return {reload: function () { cursors = ['']; load(); }};
  }

  function dashboard() {
    var params = new URLSearchParams(location.search);
    if (params.get('window') && WINDOWS[params.get('window')]) $('window').value = params.get('window');
    if (params.get('label')) $('label-key').value = params.get('label');
    // Preselected filters of the checks (?q=...&verdict=...&source=...) and deliveries.
    if (params.get('q')) $('checks-q').value = params.get('q').slice(0, 100);
    [['verdict', 'checks-verdict'], ['source', 'checks-source'],
     ['delivery_source', 'deliveries-source'], ['outcome', 'deliveries-outcome']].forEach(function (p) {
      var v = params.get(p[0]), sel = $(p[1]);
      if (v && Array.prototype.some.call(sel.options, function (o) { return o.value === v; })) sel.value = v;
    });
    var checks = checksTable({body: 'checks-body', page: 'checks-page', prev: 'checks-prev', next: 'checks-next'},
      function () {
        var key = $('label-key').value.trim(), value = $('label-value').value, q = [];
        if (key && value !== '*') q.push('label.' + encodeURIComponent(key) + '=' + encodeURIComponent(value));
        var text = $('checks-q').value.trim();
        if (text) q.push('q=' + encodeURIComponent(text));
        if ($('checks-verdict').value) q.push('verdict=' + encodeURIComponent($('checks-verdict').value));
        if ($('checks-source').value) q.push('source=' + encodeURIComponent($('checks-source').value));
        return q.join('&');
      }, 25, 'no checks', Math.min(1000000, Math.max(0, parseInt(params.get('offset'), 10) || 0)));
    var deliveries = deliveriesTable();
    function reload() { loadStats(); checks.reload(); }
    function first() { loadStats(); checks.load(); }
    $('window').onchange = reload;
    $('label-value').onchange = reload;
    $('label-key').onchange = function () {
      var sel = $('label-value');
      while (sel.options.length > 1) sel.remove(1);
      sel.value = '*';
      reload();
    };
    var typing = null;
    $('checks-q').oninput = function () {
      clearTimeout(typing);
      typing = setTimeout(checks.reload, 250);
    };
    $('checks-verdict').onchange = checks.reload;
    $('checks-source').onchange = checks.reload;
    $('deliveries-source').onchange = deliveries.reload;
    $('deliveries-outcome').onchange = deliveries.reload;
    first();
    deliveries.reload();
  }

  // ---- "/models/{sha256}" ----
  // The stored reports of the model, each linking to its page; the one shown is marked.
  function modelReports(sha, shownQuery) {
    return api('/v1/models/' + encodeURIComponent(sha) + '/reports').then(function (r) { return r.json(); })
      .then(function (j) {
        var body = $('model-reports-body');
        body.textContent = '';
        var list = j.reports || [];
        list.forEach(function (v) {
          var shown = v.current && v.report_query === shownQuery;
          var tr = el('tr', {'class': 'report-row' + (shown ? ' current' : ''),
                             'data-options': v.options, 'data-verdict': v.verdict}, body);
          el('td', {'class': 'small options'}, tr, optionsText(v));
          el('td', {}, tr, v.rule_set_version + (v.current ? '' : ' (older)'));
          verdictCell(tr, v.verdict);
          el('td', {}, tr, time(v.created_time));
          var td = el('td', {}, tr);
          if (shown) {
            td.textContent = 'shown';
          } else if (v.model_page) {
            el('a', {href: v.model_page, 'class': 'report-link'}, td, 'open');
          } else {
            td.textContent = v.current ? 'needs its Pulsar2 configuration (pulsar2_config=...)'
                                       : 'checked again when asked for';
          }
        });
        if (!list.length) {
          el('td', {colspan: 5, 'class': 'small'}, el('tr', {}, body), 'no stored report of this model');
        }
        return list;
      });
  }

  function report(sha) {
    var shownQuery = (location.search || '').replace(/^\?/, '');
    var history = checksTable({body: 'model-history-body', page: 'model-history-page',
                               prev: 'model-history-prev', next: 'model-history-next'},
      function () { return 'sha256=' + encodeURIComponent(sha); }, 10, 'no checks of this model');
    var lists = modelReports(sha, shownQuery).catch(function (e) { failRow('model-reports-body', 5, e); });
    var past = history.reload();
    api('/v1/reports/' + encodeURIComponent(sha) + '/html' + (location.search || ''))
      .then(function (r) { return r.text(); })
      .then(function (html) {
        // The report is a whole document with its own scripts: it replaces this page, and the
        // lists of the model (built above, their handlers kept) move into it.
        // Both are filled before the swap, so the new document is whole when it has loaded.
        var reports = $('model-reports'), checks = $('model-history');
        return Promise.all([lists, past]).then(function () {
          document.open();
          document.write(html);
          document.close();
          var main = document.querySelector('main') || document.body;
          main.insertBefore(reports, main.firstChild);
          main.appendChild(checks);
          // document.open() erased the handlers of the old nodes: the pager binds them again.
          history.bind();
        });
      })
      .catch(function (e) {
        var box = $('report');
        box.textContent = '';
        el('p', {'class': 'error'}, box, String(e.message || e));
        el('p', {'id': 'report-missing'}, box, 'No report of this model with ' +
           (shownQuery ? 'the options ' + shownQuery : 'the default options') +
           ' is stored; the reports of this model that are stored are listed below.');
      });
  }

  var page = document.body.getAttribute('data-page');
  if (page === 'dashboard') dashboard();
  if (page === 'report') report(document.body.getAttribute('data-sha256'));
})();
