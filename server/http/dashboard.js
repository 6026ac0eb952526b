// The dashboard pages of axqc-server (docs/report-html.md): "/" (pass rate over time, top failing
// rules, recent checks) and "/models/{sha256}" (the stored report as the HTML report). Data come
// from the JSON API (/v1/stats, /v1/models, /v1/reports/{sha256}/html) with the bearer token kept
// in this browser's localStorage when the server asks for one. No external resources.
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

  function loadModels() {
    var key = $('label-key').value.trim(), value = $('label-value').value;
    var q = 'limit=25';
    if (key && value !== '*') q += '&label.' + encodeURIComponent(key) + '=' + encodeURIComponent(value);
    api('/v1/models?' + q).then(function (r) { return r.json(); }).then(function (m) {
      var body = $('models-body');
      body.textContent = '';
      (m.models || []).forEach(function (v) {
        var tr = el('tr', {'class': 'check-row', 'data-sha256': v.sha256, 'data-verdict': v.verdict}, body);
        el('td', {}, tr, (v.time || '').replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
        var a = el('a', {href: '/models/' + v.sha256}, el('td', {}, tr), v.name || v.sha256.slice(0, 12));
        a.title = v.sha256;
        el('span', {'class': 'verdict verdict-' + v.verdict}, el('td', {}, tr), v.verdict);
        el('td', {'class': 'n'}, tr, num(v.errors));
        el('td', {'class': 'n'}, tr, num(v.warnings));
        var labels = Object.keys(v.labels || {}).sort().map(function (k) { return k + '=' + v.labels[k]; });
        el('td', {'class': 'small'}, tr, labels.join(' '));
      });
      if (!(m.models || []).length) {
        el('td', {colspan: 6, 'class': 'small'}, el('tr', {}, body), 'no checks yet');
      }
    }).catch(function (e) { fail('models', e); });
  }

  function dashboard() {
    var params = new URLSearchParams(location.search);
    if (params.get('window') && WINDOWS[params.get('window')]) $('window').value = params.get('window');
    if (params.get('label')) $('label-key').value = params.get('label');
    function reload() { loadStats(); loadModels(); }
    $('window').onchange = reload;
    $('label-value').onchange = reload;
    $('label-key').onchange = function () {
      var sel = $('label-value');
      while (sel.options.length > 1) sel.remove(1);
      sel.value = '*';
      reload();
    };
    reload();
  }

  // ---- "/models/{sha256}" ----
  function report(sha) {
    var qs = location.search || '';
    api('/v1/reports/' + encodeURIComponent(sha) + '/html' + qs)
      .then(function (r) { return r.text(); })
      .then(function (html) {
        // The report is a whole document with its own scripts: it replaces this page.
        document.open();
        document.write(html);
        document.close();
      })
      .catch(function (e) { fail('report', e); });
  }

  var page = document.body.getAttribute('data-page');
  if (page === 'dashboard') dashboard();
  if (page === 'report') report(document.body.getAttribute('data-sha256'));
})();
