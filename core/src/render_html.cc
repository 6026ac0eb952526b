// The HTML report (render_graph.h): one self-contained document, graph views laid out by
// Graphviz (gvc/cgraph).
#include <dlfcn.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "axqc/catalog.h"
#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "fix_command.h"
#include "render_dot.h"
#include "xml_escape.h"

namespace axqc {
namespace {

using detail::IsQdq;

std::string Esc(std::string_view s) { return detail::XmlEscape(s); }

// Graphviz keeps global state (contexts, the error handler, plugin tables): one layout at a time.
std::mutex& GraphvizMutex() {
  static std::mutex m;
  return m;
}

// The context knows two plugins only: the dot layout and the core renderers (SVG). Graphviz's
// plugin configuration would add Pango for text layout, which reads fontconfig's configuration
// and font files and starts threads, in the server and in a sandboxed worker alike; without a
// text layout plugin Graphviz sizes labels from its built-in font metrics, the same on every
// machine. When the plugins cannot be loaded by path, the configured context is the fallback.
GVC_t* Context() {
  static GVC_t* gvc = [] {
    agseterr(AGMAX);  // errors are reported through the return values, not on stderr
    static lt_symlist_t builtins[3] = {};
    const std::pair<const char*, const char*> wanted[] = {
        {AXQC_GVPLUGIN_DIR "/libgvplugin_dot_layout.so.6", "gvplugin_dot_layout_LTX_library"},
        {AXQC_GVPLUGIN_DIR "/libgvplugin_core.so.6", "gvplugin_core_LTX_library"}};
    std::size_t n = 0;
    for (const auto& [file, symbol] : wanted) {
      void* lib = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
      void* library = lib == nullptr ? nullptr : ::dlsym(lib, symbol);
      if (library == nullptr) break;
      builtins[n].name = symbol;
      builtins[n].address = library;
      ++n;
    }
    return n == 2 ? gvContextPlugins(builtins, 0) : gvContext();
  }();
  return gvc;
}

// The elements and attributes Graphviz's SVG renderer writes for BuildDot's graphs. Anything else
// in its output (a link target, an image, a script) did not come from the renderer and is dropped:
// <a> keeps only its tooltip (xlink:title), no href/xlink:href survives.
bool KeptElement(std::string_view name) {
  static const std::set<std::string_view> kept{"svg",  "g",       "title", "polygon", "polyline",
                                               "path", "ellipse", "text",  "a",       "tspan"};
  return kept.contains(name);
}

bool KeptAttribute(std::string_view name) {
  static const std::set<std::string_view> kept{"id",
                                               "class",
                                               "width",
                                               "height",
                                               "viewBox",
                                               "xmlns",
                                               "xmlns:xlink",
                                               "transform",
                                               "fill",
                                               "stroke",
                                               "points",
                                               "d",
                                               "cx",
                                               "cy",
                                               "rx",
                                               "ry",
                                               "x",
                                               "y",
                                               "text-anchor",
                                               "font-family",
                                               "font-size",
                                               "font-weight",
                                               "font-style",
                                               "stroke-width",
                                               "stroke-dasharray",
                                               "xlink:title",
                                               "fill-opacity",
                                               "stroke-opacity",
                                               "preserveAspectRatio"};
  return kept.contains(name);
}

}  // namespace

namespace detail {

std::string SanitizeSvg(std::string_view svg) {
  std::string out;
  out.reserve(svg.size());
  std::size_t i = 0;
  while (i < svg.size()) {
    const std::size_t lt = svg.find('<', i);
    if (lt == std::string_view::npos) {
      out.append(svg.substr(i));
      break;
    }
    out.append(svg.substr(i, lt - i));
    if (svg.substr(lt).starts_with("<!--")) {  // comments, dropped
      const std::size_t end = svg.find("-->", lt + 4);
      i = end == std::string_view::npos ? svg.size() : end + 3;
      continue;
    }
    if (svg.substr(lt).starts_with("<!") || svg.substr(lt).starts_with("<?")) {
      const std::size_t end = svg.find('>', lt);
      i = end == std::string_view::npos ? svg.size() : end + 1;
      continue;
    }
    // A tag: <name attr="value" ...> or </name> or <name .../>. Graphviz writes '<', '>' and '"'
    // inside values as entities, so the first '>' outside quotes ends it.
    std::size_t p = lt + 1;
    const bool closing = p < svg.size() && svg[p] == '/';
    if (closing) ++p;
    const std::size_t name_start = p;
    while (p < svg.size() && (std::isalnum(static_cast<unsigned char>(svg[p])) != 0 ||
                              svg[p] == ':' || svg[p] == '-' || svg[p] == '_')) {
      ++p;
    }
    const std::string_view name = svg.substr(name_start, p - name_start);
    std::string tag = closing ? "</" : "<";
    tag += name;
    bool self_closing = false;
    bool ok = !name.empty();
    while (ok && p < svg.size()) {
      while (p < svg.size() && std::isspace(static_cast<unsigned char>(svg[p])) != 0) ++p;
      if (p >= svg.size()) {
        ok = false;
        break;
      }
      if (svg[p] == '>') {
        ++p;
        break;
      }
      if (svg[p] == '/' && p + 1 < svg.size() && svg[p + 1] == '>') {
        self_closing = true;
        p += 2;
        break;
      }
      const std::size_t an = p;
      while (p < svg.size() && svg[p] != '=' && svg[p] != '>' && svg[p] != '/' &&
             std::isspace(static_cast<unsigned char>(svg[p])) == 0) {
        ++p;
      }
      const std::string_view attr = svg.substr(an, p - an);
      if (attr.empty() || p >= svg.size() || svg[p] != '=' || p + 1 >= svg.size() ||
          (svg[p + 1] != '"' && svg[p + 1] != '\'')) {
        ok = false;  // only name="value" is Graphviz's
        break;
      }
      const char quote = svg[p + 1];
      const std::size_t vend = svg.find(quote, p + 2);
      if (vend == std::string_view::npos) {
        ok = false;
        break;
      }
      const std::string_view value = svg.substr(p + 2, vend - p - 2);
      p = vend + 1;
      if (!KeptAttribute(attr) || value.find('<') != std::string_view::npos) continue;
      tag += ' ';
      tag += attr;
      tag += "=\"";
      for (char c : value) {
        if (c == '"') {
          tag += "&quot;";
        } else {
          tag += c;
        }
      }
      tag += '"';
    }
    if (!ok) {  // not a tag Graphviz writes: nothing of it is kept
      const std::size_t end = svg.find('>', lt + 1);
      i = end == std::string_view::npos ? svg.size() : end + 1;
      continue;
    }
    i = p;
    if (!KeptElement(name)) continue;
    if (self_closing) tag += '/';
    out += tag;
    out += '>';
  }
  return out;
}

}  // namespace detail

namespace {

// SVG of a DOT graph laid out with "dot"; "" when Graphviz cannot lay it out.
std::string Layout(const std::string& dot, const std::string& css_class) {
  std::lock_guard lock(GraphvizMutex());
  GVC_t* gvc = Context();
  if (gvc == nullptr) return "";
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) return "";
  std::string svg;
  if (gvLayout(gvc, g, "dot") == 0) {
    char* data = nullptr;
    unsigned int length = 0;
    if (gvRenderData(gvc, g, "svg", &data, &length) == 0 && data != nullptr) {
      svg.assign(data, length);
    }
    if (data != nullptr) gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agclose(g);
  // Inline SVG: without the XML prolog, DOCTYPE and comments before the element.
  const auto start = svg.find("<svg");
  if (start == std::string::npos) return "";
  svg = detail::SanitizeSvg(std::string_view(svg).substr(start));
  if (!svg.starts_with("<svg")) return "";
  // Graphviz names the top group of every drawing "graph0": not an id of the page, where ids
  // are unique (the findings' anchors).
  if (const auto top = svg.find(" id=\"graph0\""); top != std::string::npos) svg.erase(top, 12);
  svg.insert(4, " class=\"" + css_class + "\"");
  return svg;
}

// The layouts of one document and the time they took: Left() is false once the budget is spent.
class LayoutClock {
 public:
  explicit LayoutClock(double seconds) : budget_(seconds) {}
  bool Left() const { return spent_ < budget_; }
  std::string Run(const std::string& dot, const std::string& css_class) {
    const auto start = std::chrono::steady_clock::now();
    std::string svg = Layout(dot, css_class);
    spent_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return svg;
  }

 private:
  double budget_;
  double spent_ = 0;
};

// A finding group lists its first locations and, folded in a <details>, at most this many of its
// other findings (the page says how many the JSON report has beyond them).
constexpr std::size_t kMaxMoreFindings = 5000;

// The rule ID, linked to its page under HtmlOptions::rules_url; its one-line summary from the
// catalog is the tooltip, so the link says what the rule is about without the page.
std::string RuleLink(const HtmlOptions& o, const std::string& rule) {
  const RuleInfo* info = FindRule(rule);
  const std::string title =
      info == nullptr ? "" : " title=\"" + Esc(std::string(info->summary)) + "\"";
  if (o.rules_url.empty()) return "<span class=\"rule\"" + title + ">" + Esc(rule) + "</span>";
  return "<a class=\"rule\" href=\"" + Esc(RuleUrl(o.rules_url, rule)) + "\"" + title + ">" +
         Esc(rule) + "</a>";
}

// The model file a repair command names (HtmlOptions::repair_by_file_name).
std::string RepairFile(const HtmlOptions& o, const std::string& model_file) {
  if (!o.repair_by_file_name) return model_file;
  const std::size_t slash = model_file.find_last_of("/\\");
  std::string base = slash == std::string::npos ? model_file : model_file.substr(slash + 1);
  const bool onnx = base.size() > 5 && base.compare(base.size() - 5, 5, ".onnx") == 0 &&
                    base.find('@') == std::string::npos;
  return onnx ? base : "model.onnx";
}

// What the rule checks and how a fix usually looks, from the catalog: the report explains its
// rules without the rule pages (a report opened outside a checkout, the server's pages).
void RuleInfoLine(std::ostream& os, const HtmlOptions& o, const std::string& rule) {
  const RuleInfo* info = FindRule(rule);
  if (info == nullptr) return;
  os << "<p class=\"rule-info\"><b>Rule:</b> " << Esc(std::string(info->summary));
  if (!info->fix.empty()) os << " <b>Fix:</b> " << Esc(std::string(info->fix));
  if (!o.rules_url.empty()) {
    os << " <a class=\"rule-page\" href=\"" << Esc(RuleUrl(o.rules_url, rule))
       << "\">rule page</a>";
  }
  os << "</p>\n";
}

// Model text in a fragment id: ASCII letters, digits, '-', '_' and '.' kept, every other byte
// '_', at most 64 bytes of it.
std::string IdPart(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    if (out.size() >= 64) break;
    const auto c = static_cast<unsigned char>(ch);
    out += (c < 0x80 && (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.')) ? ch : '_';
  }
  return out;
}

// The fragment ids of the findings (docs/report-html.md): "f-<rule page>--<primary node>" through
// IdPart ("f-<rule page>" without a node), a "-2", "-3", ... suffix when an earlier finding has the
// same one. Stable across runs while the rule and node names stay; unique within the document.
class FindingAnchors {
 public:
  explicit FindingAnchors(const Report& r) {
    of_.reserve(r.findings.size());
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      of_.push_back(Make(r.findings[i]));
      if (!r.findings[i].id.empty()) by_id_.emplace(r.findings[i].id, i);
    }
  }
  const std::string& Of(std::size_t index) const { return of_[index]; }
  // Index into Report::findings of the finding with this id, or npos.
  std::size_t Find(const std::string& id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? std::string::npos : it->second;
  }
  // An anchor for a finding that is not in Report::findings (a group's first locations of a
  // report without the finding list).
  std::string Make(const Finding& f) {
    std::string base = "f-" + IdPart(detail::RulePage(f.rule));
    if (!f.nodes.empty() && !f.nodes[0].empty()) base += "--" + IdPart(f.nodes[0]);
    std::string id = base;
    for (int n = 2; used_.contains(id); ++n) id = base + "-" + std::to_string(n);
    used_.insert(id);
    return id;
  }

 private:
  std::vector<std::string> of_;
  std::unordered_map<std::string, std::size_t> by_id_;
  std::set<std::string> used_;
};

const char* kCss = R"CSS(
:root{--err:#c62828;--warn:#ef6c00;--info:#1565c0;--ok:#2e7d32;--na:#00838f;--line:#d5d9de}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid var(--line);padding:16px 24px}
header h1{font-size:20px;margin:0 0 4px;word-break:break-all}
main{padding:8px 24px 40px;max-width:1400px}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px 16px;margin:16px 0}
h2{font-size:17px;margin:0 0 8px}h3{font-size:15px;margin:4px 0}
.verdict{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600;text-transform:uppercase;font-size:13px}
.verdict-conformant,.verdict-pass{background:var(--ok)}.verdict-non_conformant,.verdict-fail{background:var(--err)}
.verdict-not_applicable{background:var(--na)}
.headline{font-size:16px;margin:6px 0}
.facts{color:#57606a;font-size:12.5px}.facts code{font-size:12px}
.sev{font-weight:600;text-transform:uppercase;font-size:11.5px;padding:1px 6px;border-radius:4px;color:#fff}
.sev-error{background:var(--err)}.sev-warn{background:var(--warn)}.sev-info{background:var(--info)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #eaeef2;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.msg{max-width:640px}
tr.row-error td:first-child{border-left:3px solid var(--err)}tr.row-warn td:first-child{border-left:3px solid var(--warn)}tr.row-info td:first-child{border-left:3px solid var(--info)}
.cause{border-left:4px solid var(--err);padding:4px 10px;margin:8px 0;background:#fff8f7}
.cause.sev-w{border-color:var(--warn);background:#fffaf2}.cause.sev-i{border-color:var(--info);background:#f5f9ff}
.hint{color:#3b4249;margin:4px 0}
.group{border-top:1px solid var(--line);padding-top:8px;margin-top:12px}
.view{border:1px solid var(--line);border-radius:4px;margin:8px 0;background:#fbfcfd;overflow:hidden;position:relative}
.view svg{display:block;width:100%;height:auto;max-height:560px;cursor:grab}
.view svg.whole{max-height:1400px}
.view .tools{position:absolute;right:6px;top:6px;z-index:2}
.view .tools button{font-size:12px;margin-left:2px}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:14px;height:10px;border:1px solid #5b6470;border-radius:3px;margin-right:4px;vertical-align:middle}
svg g.offending > path,svg g.offending > polygon,svg g.offending > ellipse{filter:drop-shadow(0 0 3px rgba(214,39,40,.6))}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.small{color:#57606a;font-size:12px}
#explorer-search{width:100%;max-width:480px;padding:5px 8px;font-size:14px}
#explorer-list{max-height:260px;overflow:auto;border:1px solid var(--line);margin:6px 0;padding:0;list-style:none}
#explorer-list li{padding:2px 8px;cursor:pointer;font-size:12.5px}
#explorer-list li:hover,#explorer-list li.sel{background:#e8f0fe}
#explorer-list li.bad{color:var(--err);font-weight:600}
#explorer-view svg{max-height:520px}
a.rule,span.rule{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
nav#toc{background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px 16px;margin:16px 0;font-size:13px}
nav#toc ol{margin:2px 0;padding-left:22px}nav#toc li{margin:1px 0}
.rule-info{margin:2px 0 6px;color:#3b4249;font-size:12.5px}
details.more{margin:6px 0}details.more summary{cursor:pointer;color:#0550ae;font-size:12.5px}
tr:target td,div.cause:target{background:#fff3c4}
a.fid{color:#8c959f;text-decoration:none;margin-right:4px}a.fid:hover{color:#0550ae}
)CSS";

// Pan and zoom of every graph view, the explorer of the whole graph.
const char* kJs = R"JS(
(function(){
'use strict';
function panZoom(svg){
  if(svg.dataset.pz)return;svg.dataset.pz='1';
  var vb=svg.viewBox.baseVal;if(!vb||!vb.width)return;
  var home=[vb.x,vb.y,vb.width,vb.height];
  function set(a){svg.setAttribute('viewBox',a.join(' '));}
  svg.removeAttribute('width');svg.removeAttribute('height');
  // A view of a few nodes is drawn at up to 1.5 times its natural size, not stretched to the page.
  svg.style.maxWidth=Math.max(vb.width*1.5,240)+'px';svg.style.margin='0 auto';
  svg.addEventListener('wheel',function(e){
    e.preventDefault();var r=svg.getBoundingClientRect(),v=svg.viewBox.baseVal;
    var k=e.deltaY<0?0.8:1.25,px=v.x+(e.clientX-r.left)/r.width*v.width,py=v.y+(e.clientY-r.top)/r.height*v.height;
    set([px-(px-v.x)*k,py-(py-v.y)*k,v.width*k,v.height*k]);},{passive:false});
  var drag=null;
  svg.addEventListener('mousedown',function(e){drag=[e.clientX,e.clientY];svg.style.cursor='grabbing';});
  window.addEventListener('mouseup',function(){drag=null;svg.style.cursor='';});
  window.addEventListener('mousemove',function(e){
    if(!drag)return;var r=svg.getBoundingClientRect(),v=svg.viewBox.baseVal;
    var dx=(e.clientX-drag[0])*v.width/r.width,dy=(e.clientY-drag[1])*v.height/r.height;
    drag=[e.clientX,e.clientY];set([v.x-dx,v.y-dy,v.width,v.height]);});
  var box=svg.parentNode,tools=document.createElement('div');tools.className='tools';
  [['+',0.8],['\u2212',1.25],['reset',0]].forEach(function(b){
    var btn=document.createElement('button');btn.textContent=b[0];btn.type='button';
    btn.onclick=function(){var v=svg.viewBox.baseVal;
      if(!b[1]){set(home);return;}
      var cx=v.x+v.width/2,cy=v.y+v.height/2;set([cx-v.width*b[1]/2,cy-v.height*b[1]/2,v.width*b[1],v.height*b[1]]);};
    tools.appendChild(btn);});
  box.insertBefore(tools,svg);
}
window.axqcPanZoom=panZoom;
document.querySelectorAll('.view svg.graph').forEach(panZoom);
// A link to a finding listed under "more": open its <details>, then go there.
function reveal(){
  var t=location.hash&&document.getElementById(location.hash.slice(1));if(!t)return;
  for(var p=t.parentNode;p;p=p.parentNode)if(p.tagName==='DETAILS')p.open=true;
  t.scrollIntoView();
}
window.addEventListener('hashchange',reveal);reveal();
var el=document.getElementById('axqc-graph');if(!el)return;
var G=JSON.parse(el.textContent),n=G.names.length,succ=[];
for(var i=0;i<n;i++)succ.push([]);
G.preds.forEach(function(p,v){for(var k=0;k<p.length;k+=2)succ[p[k]].push(v,p[k+1]);});
var input=document.getElementById('explorer-search'),list=document.getElementById('explorer-list'),
    view=document.getElementById('explorer-view'),count=document.getElementById('explorer-count');
var bad={};G.bad.forEach(function(i){bad[i]=1;});
function fill(){
  var q=input.value.trim().toLowerCase(),shown=0,total=0;list.textContent='';
  for(var i=0;i<n;i++){
    if(q&&G.names[i].toLowerCase().indexOf(q)<0&&G.ops[G.op[i]].toLowerCase()!==q)continue;
    total++;if(shown>=200)continue;shown++;
    var li=document.createElement('li');li.dataset.node=i;if(bad[i])li.className='bad';
    li.textContent=G.ops[G.op[i]]+'  '+G.names[i];li.onclick=function(){show(+this.dataset.node);};
    list.appendChild(li);}
  count.textContent=total+' node'+(total==1?'':'s')+' match'+(total==1?'es':'')+(total>shown?' (first '+shown+' listed)':'');
}
var NS='http://www.w3.org/2000/svg';
function mk(t,a,p){var e=document.createElementNS(NS,t);for(var k in a)e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}
function show(c){
  Array.prototype.forEach.call(list.children,function(li){li.classList.toggle('sel',+li.dataset.node===c);});
  var dist={},order=[c],qu=[c];dist[c]=0;
  while(qu.length&&order.length<60){
    var u=qu.shift(),nb=[],p=G.preds[u],s=succ[u];
    for(var k=0;k<p.length;k+=2)nb.push(p[k]);for(k=0;k<s.length;k+=2)nb.push(s[k]);
    nb.slice(0,24).forEach(function(v){if(v in dist||dist[u]>=2||order.length>=60)return;dist[v]=dist[u]+1;order.push(v);qu.push(v);});}
  order.sort(function(a,b){return a-b;});
  var layer={},rows=[],inset={};order.forEach(function(v){inset[v]=1;});
  order.forEach(function(v){var l=0,p=G.preds[v];for(var k=0;k<p.length;k+=2)if(inset[p[k]])l=Math.max(l,layer[p[k]]+1);
    layer[v]=l;(rows[l]=rows[l]||[]).push(v);});
  var W=170,H=34,GX=24,GY=58,width=4*(W+GX),pos={};
  rows.forEach(function(r){width=Math.max(width,r.length*(W+GX));});
  rows.forEach(function(r,l){var x0=(width-r.length*(W+GX))/2;r.forEach(function(v,k){pos[v]=[x0+k*(W+GX)+GX/2,l*(H+GY)+10];});});
  var svg=mk('svg',{'class':'graph explorer',viewBox:'0 0 '+width+' '+Math.max(rows.length*(H+GY)+10,3*(H+GY))});
  mk('defs',{},svg).innerHTML='<marker id="ax-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#7a828c"/></marker>';
  // A node that fans out the same Q/DQ parameters labels its first edge only (the others: tooltip).
  var said={};
  order.forEach(function(v){var p=G.preds[v];for(var k=0;k<p.length;k+=2){var u=p[k];if(!inset[u])continue;
    var a=pos[u],b=pos[v],q=G.quant[p[k+1]],g=mk('g',{'class':'edge'+(q?' qdq':'')},svg);
    mk('line',{x1:a[0]+W/2,y1:a[1]+H,x2:b[0]+W/2,y2:b[1],stroke:'#7a828c','marker-end':'url(#ax-arrow)'},g);
    if(!q)continue;if(said[u+':'+p[k+1]]){mk('title',{},g).textContent=q;continue;}said[u+':'+p[k+1]]=1;
    var t=mk('text',{x:(a[0]+b[0])/2+W/2+4,y:(a[1]+H+b[1])/2,'font-size':9,fill:'#37474f'},g);t.textContent=q;}});
  var fills={pattern:'#dccbf5',operator:'#cfe5f7',passive:'#d8efd1',nonquant:'#ececec',none:'#ececec'};
  order.forEach(function(v){var cls=G.classes[G.cls[v]],g=mk('g',{'class':'node unit-'+cls+(bad[v]?' offending':'')+(v===c?' selected':''),id:'x-node-'+G.names[v]},svg);
    g.style.cursor='pointer';g.onclick=function(){show(v);};
    var r=mk('rect',{x:pos[v][0],y:pos[v][1],width:W,height:H,rx:5,fill:fills[cls]||'#ececec',stroke:bad[v]?'#d62728':(v===c?'#1565c0':'#5b6470'),'stroke-width':bad[v]||v===c?3:1},g);
    mk('title',{},g).textContent=G.ops[G.op[v]]+' '+G.names[v];
    var t1=mk('text',{x:pos[v][0]+W/2,y:pos[v][1]+14,'text-anchor':'middle','font-size':11},g);t1.textContent=G.ops[G.op[v]];
    var nm=G.names[v];if(nm.length>28)nm='\u2026'+nm.slice(-27);
    var t2=mk('text',{x:pos[v][0]+W/2,y:pos[v][1]+27,'text-anchor':'middle','font-size':10,fill:'#444'},g);t2.textContent=nm;});
  view.textContent='';view.appendChild(svg);panZoom(svg);
}
input.addEventListener('input',fill);fill();
if(G.bad.length)show(G.bad[0]);else if(n)show(0);
// The explorer changed the page's height: go to the address's anchor again.
reveal();
})();
)JS";

// The explorer's data: compute nodes (Q/DQ chains folded into labelled edges), in graph order.
nlohmann::json ExplorerData(const Report& r, const ModelGraph& g,
                            const std::set<std::string>& offending) {
  std::vector<int> index(g.nodes.size(), -1);
  nlohmann::json names = nlohmann::json::array(), op = nlohmann::json::array(),
                 cls = nlohmann::json::array(), preds = nlohmann::json::array(),
                 bad = nlohmann::json::array();
  std::map<std::string, int> ops, quants, classes;
  std::vector<std::string> op_list, quant_list{""}, class_list;
  quants[""] = 0;
  auto intern = [](std::map<std::string, int>& m, std::vector<std::string>& l,
                   const std::string& s) {
    auto [it, added] = m.emplace(s, static_cast<int>(l.size()));
    if (added) l.push_back(s);
    return it->second;
  };
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& node = g.nodes[n];
    if (IsQdq(node)) continue;
    index[n] = static_cast<int>(names.size());
    if (offending.contains(node.name)) bad.push_back(index[n]);
    names.push_back(node.name);
    op.push_back(intern(ops, op_list, node.op_type));
    cls.push_back(intern(classes, class_list, std::string(detail::NodeClass(r, node))));
    nlohmann::json p = nlohmann::json::array();
    for (int t : node.inputs) {
      std::string quant;
      // Through the Q/DQ chain feeding this input (at most a few nodes) to a compute node.
      for (int step = 0; step < 4 && t >= 0 && static_cast<std::size_t>(t) < g.tensors.size();
           ++step) {
        const int u = g.tensors[static_cast<std::size_t>(t)].producer;
        if (u < 0) break;
        const auto& prod = g.nodes[static_cast<std::size_t>(u)];
        if (!IsQdq(prod)) {
          const int from = index[static_cast<std::size_t>(u)];
          if (from >= 0) {  // an earlier node (graph order is topological)
            p.push_back(from);
            p.push_back(intern(quants, quant_list, quant));
          }
          break;
        }
        if (quant.empty() || prod.op_type == "QuantizeLinear") quant = prod.quant;
        t = prod.inputs.empty() ? -1 : prod.inputs[0];
      }
    }
    preds.push_back(std::move(p));
  }
  return {{"names", std::move(names)}, {"ops", op_list},        {"op", std::move(op)},
          {"classes", class_list},     {"cls", std::move(cls)}, {"quant", quant_list},
          {"preds", std::move(preds)}, {"bad", std::move(bad)}};
}

// The precision a compute node runs at: the quantized type of its first quantized input (the
// activation comes first in every ONNX operator the spec covers), "float" without one. The type is
// the first word of the feeding Q/DQ's description ("U8 per-tensor scale=..." -> "U8").
std::string NodePrecision(const ModelGraph& g, const GraphNode& node) {
  for (int t : node.inputs) {
    if (t < 0 || static_cast<std::size_t>(t) >= g.tensors.size()) continue;
    const int u = g.tensors[static_cast<std::size_t>(t)].producer;
    if (u < 0 || static_cast<std::size_t>(u) >= g.nodes.size()) continue;
    const auto& prod = g.nodes[static_cast<std::size_t>(u)];
    if (prod.op_type != "DequantizeLinear" || prod.quant.empty()) continue;
    return prod.quant.substr(0, prod.quant.find(' '));
  }
  return "float";
}

// The precision map (docs/report-html.md): the compute nodes by the quantized type they run at,
// with their op types and first names, so that the regions of U16 or float stand out.
// False when the report has none.
bool PrecisionMap(std::ostream& os, const Report& r) {
  if (!r.graph || r.model.q_count + r.model.dq_count == 0) return false;
  struct Region {
    std::size_t nodes = 0;
    std::map<std::string, std::size_t> ops;
    std::vector<std::string> names;
  };
  std::map<std::string, Region> regions;
  for (const auto& node : r.graph->nodes) {
    if (IsQdq(node)) continue;
    Region& reg = regions[NodePrecision(*r.graph, node)];
    ++reg.nodes;
    ++reg.ops[node.op_type];
    if (reg.names.size() < 8) reg.names.push_back(node.name);
  }
  if (regions.empty()) return false;
  os << "<section id=\"precision\"><h2>Precision map</h2>\n<p class=\"small\">The compute "
        "nodes by the quantized type of their first quantized input (the type they run at on "
        "the NPU); <code>float</code>: no quantized input."
     << (r.graph->complete ? ""
                           : " Counted over the graph excerpt this report carries (" +
                                 std::to_string(r.graph->nodes.size()) + " of " +
                                 std::to_string(r.graph->model_nodes) + " nodes).")
     << "</p>\n<table><thead><tr><th>precision</th><th>nodes</th><th>op types</th>"
        "<th>first nodes</th></tr></thead><tbody>\n";
  for (const auto& [precision, reg] : regions) {
    os << "<tr data-precision=\"" << Esc(precision) << "\"><td>" << Esc(precision) << "</td><td>"
       << reg.nodes << "</td><td>";
    bool first = true;
    for (const auto& [op, n] : reg.ops) {
      os << (first ? "" : ", ") << Esc(op) << " " << n;
      first = false;
    }
    os << "</td><td>";
    for (std::size_t i = 0; i < reg.names.size(); ++i) {
      os << (i ? ", " : "") << "<code>" << Esc(reg.names[i]) << "</code>";
    }
    if (reg.nodes > reg.names.size()) os << ", ...";
    os << "</td></tr>\n";
  }
  os << "</tbody></table></section>\n";
  return true;
}

// JSON inside <script>: no '<' at all ("</script>" would end the element, "<!--" would change how
// the parser looks for its end); in JSON it only occurs inside strings, where \u003c is the same.
std::string ScriptSafe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// The nodes of a view that is over the layout budget, as a table.
void NodeTable(std::ostringstream& os, const Report& r, const ModelGraph& g,
               const std::vector<int>& nodes, const std::set<std::string>& offending) {
  os << "<table class=\"nodes\"><thead><tr><th>op</th><th>node</th><th>unit</th>"
        "<th>inputs</th></tr></thead><tbody>\n";
  for (int n : nodes) {
    const auto& node = g.nodes[static_cast<std::size_t>(n)];
    os << "<tr" << (offending.contains(node.name) ? " class=\"row-error\"" : "")
       << "><td class=\"mono\">" << Esc(node.op_type) << "</td><td class=\"mono\">"
       << Esc(node.name) << "</td><td>" << Esc(std::string(detail::NodeClass(r, node)))
       << "</td><td>" << node.inputs.size() << "</td></tr>\n";
  }
  os << "</tbody></table>";
}

const char* SevClass(Severity s) {
  return s == Severity::kError ? "sev-error" : s == Severity::kWarn ? "sev-warn" : "sev-info";
}

void Legend(std::ostringstream& os) {
  os << "<p class=\"legend\"><span><i style=\"background:#dccbf5\"></i>pattern unit</span>"
        "<span><i style=\"background:#cfe5f7\"></i>operator unit</span>"
        "<span><i style=\"background:#d8efd1\"></i>passive / requantize</span>"
        "<span><i style=\"background:#ececec\"></i>non-quant / not covered</span>"
        "<span><i style=\"background:#fff1bf;border-radius:7px\"></i>Q / DQ</span>"
        "<span><i style=\"background:#fff;border:3px solid #d62728\"></i>offending</span>"
        "<span><i style=\"background:#fff;border:2px solid #ff7f0e\"></i>involved</span>"
        "<span class=\"small\">Q/DQ edges: type, granularity, scale, zero point. Drag to pan, "
        "wheel to zoom.</span></p>\n";
}

}  // namespace

// The document (render_graph.h): headline, a table of contents with the jump list of the root
// causes, root causes, the finding groups (every finding with a stable fragment id, the rule's
// summary and fix from the catalog, "caused by" linked to the cause's row), the map of the whole
// model (chains collapsed above whole_model_max_nodes) and the explorer.
std::string RenderHtml(const Report& r, const HtmlOptions& o) {
  std::ostringstream os;
  LayoutClock layouts(o.layout_seconds);
  const auto& s = r.summary;
  const std::string verdict(VerdictName(r.verdict));
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\""
     << HtmlReportCsp()
     << "\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<meta name=\"generator\" content=\"axqc "
     << Esc(r.tool_version) << "\"><title>axqc: " << Esc(r.model.file) << " - " << verdict
     << "</title><style>" << kCss << "</style></head>\n<body class=\"axqc-report\">\n<header>";
  if (!o.home_url.empty()) {
    os << "<div class=\"small\"><a href=\"" << Esc(o.home_url) << "\">&larr; " << Esc(o.home_label)
       << "</a></div>";
  }
  os << "<h1>" << Esc(r.model.file) << "</h1>\n<div class=\"headline\" id=\"headline\">"
     << "<span class=\"verdict verdict-" << verdict << "\" id=\"verdict\">" << Esc(verdict)
     << "</span> ";
  if (s.causes > 0) os << s.causes << (s.causes == 1 ? " root cause: " : " root causes: ");
  os << s.errors << (s.errors == 1 ? " error, " : " errors, ") << s.warnings
     << (s.warnings == 1 ? " warning, " : " warnings, ") << s.infos << " info";
  if (r.gate.active) {
    const std::string gv(GateVerdictName(r.gate.verdict));
    os << " &middot; gate <span class=\"verdict verdict-" << gv << "\" id=\"gate\">" << gv
       << "</span> (" << r.gate.counted.total() << " counted, " << r.gate.waived.total()
       << " waived, " << r.gate.baselined.total() << " in the baseline)";
  }
  os << "</div>\n<div class=\"facts\">sha256 <code>" << Esc(r.model.sha256)
     << "</code> &middot; IR " << r.model.ir_version << " &middot; opsets";
  for (const auto& [d, v] : r.model.opsets) os << " " << Esc(d.empty() ? "ai.onnx" : d) << ":" << v;
  if (!r.model.producer_name.empty()) {
    os << " &middot; producer " << Esc(r.model.producer_name) << " "
       << Esc(r.model.producer_version);
  }
  os << "<br>" << r.model.node_count << " nodes (Q " << r.model.q_count << ", DQ "
     << r.model.dq_count << ") &middot; Q/DQ edges " << s.qdq_edges << " (owned "
     << s.owned_qdq_edges << ") &middot; axqc " << Esc(r.tool_version) << ", rules "
     << Esc(r.rule_set_version) << (r.check_value ? " &middot; check_value on" : "")
     << "</div></header>\n<main>\n";
  // The page after the table of contents, which is written once the sections are known.
  const std::string head = os.str();
  os.str("");
  std::ostringstream toc;
  FindingAnchors anchors(r);

  // Root causes.
  const auto causes = GroupCauses(r);
  if (!causes.empty()) {
    os << "<section id=\"causes\"><h2>Root causes</h2>\n";
    toc << "<li><a href=\"#causes\">Root causes</a> (" << causes.size()
        << ")<ol id=\"toc-causes\">";
    std::size_t number = 0;
    std::size_t notes = 0;
    for (const auto& c : causes) {
      const Finding& root = r.findings[c.roots.front()];
      const char* sev = c.severity == Severity::kError  ? ""
                        : c.severity == Severity::kWarn ? " sev-w"
                                                        : " sev-i";
      const std::string name = c.severity == Severity::kInfo ? "note " + std::to_string(++notes)
                                                             : "cause " + std::to_string(++number);
      const std::string cause_id = c.severity == Severity::kInfo
                                       ? "note-" + std::to_string(notes)
                                       : "cause-" + std::to_string(number);
      toc << "<li><a href=\"#" << cause_id << "\">" << name << "</a>: " << Esc(root.rule)
          << (c.hint.id.empty() ? "" : " (" + Esc(c.hint.title) + ")") << "</li>";
      os << "<div class=\"cause" << sev << "\" id=\"" << cause_id << "\" data-rule=\""
         << Esc(root.rule) << "\"><b>" << name << "</b> <span class=\"sev " << SevClass(c.severity)
         << "\">" << SeverityName(c.severity) << "</span> " << RuleLink(o, root.rule) << " ";
      if (!c.hint.id.empty()) os << "<b>" << Esc(c.hint.title) << "</b> ";
      os << "&mdash; " << Esc(root.group_key);
      const std::size_t total = c.roots.size() + c.consequences.size();
      os << " <span class=\"small\">(" << total << (total == 1 ? " finding" : " findings");
      if (!c.consequences.empty()) {
        os << ": " << c.roots.size() << " at the root, " << c.consequences.size()
           << (c.consequences.size() == 1 ? " consequence" : " consequences");
      }
      os << ")</span>";
      if (!c.hint.id.empty()) {
        os << "<div class=\"hint\">" << Esc(c.hint.text);
        if (!c.hint.rewrite.empty()) {
          const std::string file = RepairFile(o, r.model.file);
          os << " Repair";
          if (file != r.model.file)
            os << " (with the model saved as <code>" << Esc(file) << "</code>)";
          os << ": <code>" << Esc(detail::FixCommand(file, c.hint.rewrite)) << "</code>.";
        }
        os << "</div>";
      }
      os << "<div class=\"small\">e.g. <a class=\"root\" href=\"#" << anchors.Of(c.roots.front())
         << "\">" << Esc(root.message)
         << (root.nodes.empty() ? "" : " (node <code>" + Esc(root.nodes[0]) + "</code>)")
         << "</a></div></div>\n";
    }
    toc << "</ol></li>";
    os << "</section>\n";
  }

  // Chip targets (docs/targets.md): the portability matrix of the requested chips.
  if (!r.targets.empty()) {
    toc << "<li><a href=\"#targets\">Targets</a></li>";
    os << "<section id=\"targets\"><h2>Targets</h2>\n<p class=\"small\">The model against each "
          "chip's documented NPU operator table; not part of the spec verdict.</p>\n"
       << "<table><thead><tr><th>chip</th><th>verdict</th><th>errors</th><th>notes</th>"
       << "<th>blocking nodes</th><th>profile source</th></tr></thead><tbody>\n";
    for (const auto& t : r.targets) {
      os << "<tr data-chip=\"" << Esc(t.chip) << "\"><td>" << Esc(t.name) << "</td><td>"
         << Esc(TargetVerdictName(t.verdict)) << "</td><td>" << t.errors << "</td><td>" << t.notes
         << "</td><td>";
      for (std::size_t i = 0; i < t.blocking.size(); ++i) {
        const auto& b = t.blocking[i];
        os << (i ? ", " : "") << Esc(b.op_type) << " <code>" << Esc(b.node) << "</code> ("
           << RuleLink(o, b.rule) << ")";
      }
      os << "</td><td class=\"small\">" << Esc(t.source) << " (" << Esc(t.doc_version)
         << ")</td></tr>\n";
    }
    os << "</tbody></table></section>\n";
  }

  if (PrecisionMap(os, r)) toc << "<li><a href=\"#precision\">Precision map</a></li>";

  // Finding groups with their graph views.
  const auto seeds = GroupSeeds(r);
  os << "<section id=\"findings\"><h2>Findings</h2>\n";
  toc << "<li><a href=\"#findings\">Findings</a> (" << r.findings.size() << " in "
      << r.groups.size() << (r.groups.size() == 1 ? " group" : " groups") << ")";
  if (!r.groups.empty()) toc << "<ol id=\"toc-groups\">";
  // Each group's findings in Report::findings (indices), in report order: its first locations
  // come first (report.cc groups by rule and kind in this order).
  std::vector<std::vector<std::size_t>> members(r.groups.size());
  {
    std::map<std::pair<std::string, std::string>, std::size_t> group_of;
    for (std::size_t k = 0; k < r.groups.size(); ++k) {
      group_of.emplace(std::make_pair(r.groups[k].rule, r.groups[k].summary), k);
    }
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      const auto it = group_of.find({r.findings[i].rule, r.findings[i].group_key});
      if (it != group_of.end()) members[it->second].push_back(i);
    }
  }
  if (r.groups.empty()) os << "<p>No findings.</p>\n";
  if (!r.groups.empty() && r.graph) Legend(os);
  if (!r.groups.empty() && !r.graph) {
    os << "<p class=\"small\" id=\"no-graph\">"
       << (o.no_graph_note.empty() ? "This report carries no graph of the model, so the findings "
                                     "are shown without graph views."
                                   : Esc(o.no_graph_note))
       << "</p>\n";
  }
  // One table row per finding; `anchor` is its fragment id.
  auto row = [&](const Finding& f, const std::string& anchor) {
    os << "<tr class=\"finding row-" << SeverityName(f.severity) << "\" id=\"" << anchor
       << "\" data-rule=\"" << Esc(f.rule) << "\" data-node=\""
       << Esc(f.nodes.empty() ? "" : f.nodes[0]) << "\" data-id=\"" << Esc(f.id)
       << "\"><td class=\"mono\"><a class=\"fid\" href=\"#" << anchor
       << "\" title=\"link to this finding\">#</a>" << Esc(f.rule) << "</td><td class=\"mono\">";
    for (std::size_t i = 0; i < f.nodes.size(); ++i) {
      os << (i > 0 ? "<br>" : "") << Esc(f.nodes[i]);
    }
    os << "</td><td class=\"mono\">";
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
      os << (i > 0 ? "<br>" : "") << Esc(f.tensors[i]);
    }
    os << "</td><td class=\"msg\">" << Esc(f.message);
    if (f.state == FindingState::kWaived) {
      os << " <span class=\"small\">[waived: " << Esc(f.waiver_reason) << " ("
         << Esc(f.waiver_source) << ")]</span>";
    } else if (f.state == FindingState::kBaselined) {
      os << " <span class=\"small\">[in the baseline]</span>";
    }
    if (!f.cause.empty()) {
      const std::size_t c = anchors.Find(f.cause);
      if (c == std::string::npos) {
        os << " <span class=\"small\">(caused by " << Esc(f.cause) << ")</span>";
      } else {
        const Finding& cause = r.findings[c];
        os << " <span class=\"small\">(caused by <a class=\"caused-by\" href=\"#" << anchors.Of(c)
           << "\">" << Esc(cause.rule)
           << (cause.nodes.empty() ? "" : " at <code>" + Esc(cause.nodes[0]) + "</code>")
           << "</a>)</span>";
      }
    }
    os << "</td><td class=\"mono\">";
    for (std::size_t i = 0; i < f.values.size(); ++i) {
      os << (i > 0 ? "<br>" : "") << Esc(f.values[i].first) << " = " << Esc(f.values[i].second);
    }
    os << "</td></tr>\n";
  };
  const char* kTableHead =
      "<table><thead><tr><th>rule</th><th>node</th><th>tensors</th><th>message</th>"
      "<th>values</th></tr></thead><tbody>\n";
  for (std::size_t k = 0; k < r.groups.size(); ++k) {
    const auto& grp = r.groups[k];
    toc << "<li><a href=\"#group-" << k << "\">" << Esc(grp.rule) << "</a> &times;" << grp.count
        << " <span class=\"small\">" << Esc(grp.summary) << "</span></li>";
    os << "<div class=\"group\" id=\"group-" << k << "\" data-rule=\"" << Esc(grp.rule)
       << "\"><h3><span class=\"sev " << SevClass(grp.severity) << "\">"
       << SeverityName(grp.severity) << "</span> " << RuleLink(o, grp.rule) << " ["
       << Esc(grp.section) << "] &times;" << grp.count << ": " << Esc(grp.summary) << "</h3>\n";
    RuleInfoLine(os, o, grp.rule);
    os << kTableHead;
    // The group's findings from Report::findings when the report lists them all (the first
    // locations are their beginning), else its first locations only.
    const auto& all = members[k];
    const bool listed = all.size() >= grp.first.size() && all.size() == grp.count;
    if (listed) {
      for (std::size_t i = 0; i < grp.first.size(); ++i)
        row(r.findings[all[i]], anchors.Of(all[i]));
    } else {
      for (const auto& f : grp.first) row(f, anchors.Make(f));
    }
    os << "</tbody></table>";
    if (grp.count > grp.first.size()) {
      const std::size_t more = grp.count - grp.first.size();
      if (listed) {
        const std::size_t shown = std::min(more, kMaxMoreFindings);
        os << "\n<details class=\"more\" id=\"more-" << k << "\"><summary>&hellip; and " << more
           << " more" << (more == 1 ? " finding" : " findings") << " of this group";
        if (shown < more) os << " (the first " << shown << " listed here)";
        os << "</summary>" << kTableHead;
        for (std::size_t i = grp.first.size(); i < grp.first.size() + shown; ++i) {
          row(r.findings[all[i]], anchors.Of(all[i]));
        }
        os << "</tbody></table>";
        if (shown < more) {
          os << "<p class=\"small\">The other " << (more - shown)
             << " are in the JSON report (<code>--format json</code>).</p>";
        }
        os << "</details>";
      } else {
        os << "<p class=\"small\">&hellip; and " << more
           << " more (the JSON report lists every finding).</p>";
      }
    }
    if (r.graph && !seeds[k].empty()) {
      detail::DotView view;
      view.prefix = "g" + std::to_string(k) + "-";
      for (const auto& f : grp.first) {
        if (!f.nodes.empty()) view.offending.insert(f.nodes[0]);
        for (std::size_t i = 1; i < f.nodes.size(); ++i) view.involved.insert(f.nodes[i]);
        for (const auto& t : f.tensors) view.bad_tensors.insert(t);
      }
      for (const auto& n : view.offending) view.involved.erase(n);
      // Within the layout budget: fewer nodes around the seeds until the edges fit.
      const ModelGraph& g = *r.graph;
      const auto around = Neighbourhood(g, seeds[k], o.hops, o.view_max_nodes);
      const std::size_t around_edges = detail::CountEdges(g, around);
      auto nodes = around;
      std::size_t edges = around_edges;
      while (edges > o.view_max_edges && nodes.size() > 1) {
        nodes = Neighbourhood(g, seeds[k], o.hops, nodes.size() / 2);
        edges = detail::CountEdges(g, nodes);
      }
      const bool in_time = layouts.Left();
      std::string svg;
      if (edges <= o.view_max_edges && in_time) {
        svg = layouts.Run(detail::BuildDot(r, g, nodes, view), "graph");
      }
      if (!svg.empty()) {
        if (nodes.size() < around.size()) {
          os << "\n<p class=\"small budget\" id=\"budget-" << k << "\">This view shows "
             << nodes.size() << " of the " << around.size()
             << " nodes around the findings: with all of them it would have " << around_edges
             << " edges, more than the layout budget of " << o.view_max_edges
             << " edges per view.</p>";
        }
        os << "\n<div class=\"view\" id=\"view-" << k << "\">" << svg << "</div>";
      } else {
        os << "\n<p class=\"small budget\" id=\"budget-" << k << "\">";
        if (!in_time) {
          os << "The graph views of this report took longer than the layout budget of "
             << o.layout_seconds << " s, so this one is a table of its nodes.";
        } else if (edges > o.view_max_edges) {
          os << "The " << around.size() << " nodes around the findings have " << around_edges
             << " edges, more than the layout budget of " << o.view_max_edges
             << " edges per view, so they are listed instead of drawn.";
        } else {
          os << "The graph view could not be laid out; its nodes are listed instead.";
        }
        os << "</p>";
        NodeTable(os, r, g, around, view.offending);
      }
    }
    os << "</div>\n";
  }
  if (!r.groups.empty()) toc << "</ol>";
  toc << "</li>";
  os << "</section>\n";

  // The model: ownership map of a small model, the explorer for every model.
  if (r.graph && !r.graph->nodes.empty()) {
    const ModelGraph& g = *r.graph;
    std::set<std::string> offending;
    std::set<std::string> named;  // every node of those findings (the explorer marks compute nodes)
    for (const auto& f : r.findings) {
      if (f.severity == Severity::kInfo || f.nodes.empty()) continue;
      offending.insert(f.nodes[0]);
      named.insert(f.nodes.begin(), f.nodes.end());
    }
    std::vector<int> all(g.nodes.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    const std::size_t all_edges =
        g.complete && g.nodes.size() <= o.whole_model_max_nodes ? detail::CountEdges(g, all) : 0;
    if (g.complete && g.nodes.size() <= o.whole_model_max_nodes &&
        (all_edges > o.whole_model_max_edges || !layouts.Left())) {
      toc << "<li><a href=\"#model\">Ownership map of the whole model</a></li>";
      os << "<section id=\"model\"><h2>Ownership map of the whole model</h2>\n<p class=\"small "
            "budget\" id=\"budget-model\">Not drawn: ";
      if (all_edges > o.whole_model_max_edges) {
        os << "the model's " << g.nodes.size() << " nodes have " << all_edges
           << " edges, more than the layout budget of " << o.whole_model_max_edges << " edges";
      } else {
        os << "the graph views of this report took longer than the layout budget of "
           << o.layout_seconds << " s";
      }
      os << ". The explorer below shows every node.</p></section>\n";
    } else if (g.complete && g.nodes.size() <= o.whole_model_max_nodes) {
      detail::DotView view;
      view.prefix = "m-";
      view.clusters = true;
      view.offending = offending;
      const std::string svg = layouts.Run(detail::BuildDot(r, g, all, view), "graph whole");
      if (!svg.empty()) {
        toc << "<li><a href=\"#model\">Ownership map of the whole model</a></li>";
        os << "<section id=\"model\"><h2>Ownership map of the whole model</h2>\n";
        Legend(os);
        os << "<p class=\"small\">Units with more than one node are drawn as dashed clusters; the "
              "nodes of error and warning findings are outlined.</p><div class=\"view\" "
              "id=\"view-model\">"
           << svg << "</div></section>\n";
      }
    } else if (g.complete) {
      // A larger model: its compute nodes with the linear chains collapsed, when that fits the
      // budget of the ownership map.
      // Every compute node the error and warning findings name keeps a box of its own and is
      // outlined (a finding on a weight's DQ outlines the node it feeds).
      const detail::Condensed condensed = detail::Condense(g, named);
      std::size_t chained = 0;
      for (const auto& b : condensed.boxes) chained += b.size() > 1 ? b.size() : 0;
      toc << "<li><a href=\"#model\">Map of the whole model</a> (chains collapsed)</li>";
      os << "<section id=\"model\"><h2>Map of the whole model, chains collapsed</h2>\n";
      const bool fits = condensed.boxes.size() <= o.whole_model_max_nodes &&
                        condensed.edges.size() <= o.whole_model_max_edges;
      std::string svg;
      if (fits && layouts.Left()) {
        detail::DotView view;
        view.prefix = "c-";
        view.offending = named;
        svg = layouts.Run(detail::BuildCondensedDot(r, g, condensed, view), "graph whole");
      }
      if (!svg.empty()) {
        Legend(os);
        os << "<p class=\"small\" id=\"condensed-note\">The model's " << g.nodes.size()
           << " nodes in " << condensed.boxes.size()
           << " boxes: Q/DQ nodes are folded into the edges, and each linear chain of compute "
              "nodes (a node whose one predecessor feeds only it) is one bold box, "
           << chained
           << " nodes in all; the nodes of error and warning findings keep a box of their own "
              "and are outlined. Hover a chain for its nodes; the explorer below finds any node "
              "by name.</p><div class=\"view\" id=\"view-model\">"
           << svg << "</div>";
      } else {
        os << "<p class=\"small budget\" id=\"budget-model\">Not drawn: ";
        if (!fits) {
          os << "with its linear chains collapsed the model's " << g.nodes.size()
             << " nodes are still " << condensed.boxes.size() << " boxes with "
             << condensed.edges.size() << " edges, more than the layout budget of "
             << o.whole_model_max_nodes << " boxes and " << o.whole_model_max_edges << " edges";
        } else if (!layouts.Left()) {
          os << "the graph views of this report took longer than the layout budget of "
             << o.layout_seconds << " s";
        } else {
          os << "the map could not be laid out";
        }
        os << ". The explorer below shows every node.</p>";
      }
      os << "</section>\n";
    }
    toc << "<li><a href=\"#explorer\">Graph explorer</a> (search by node name)</li>";
    os << "<section id=\"explorer\"><h2>Graph explorer</h2>\n<p class=\"small\">"
       << (g.complete ? "Every compute node of the model"
                      : "The nodes around the findings (this report carries an excerpt of the "
                        "graph of " +
                            std::to_string(g.model_nodes) + " nodes)")
       << "; Q/DQ pairs are folded into the labelled edges. Search by name or op type, click a "
          "node to see its neighbourhood (2 hops).</p>\n<input id=\"explorer-search\" "
          "type=\"search\" placeholder=\"node name or op type\" autocomplete=\"off\">"
          " <span class=\"small\" id=\"explorer-count\"></span>\n<ul id=\"explorer-list\"></ul>"
          "<div class=\"view\" id=\"explorer-view\"></div>\n<script type=\"application/json\" "
          "id=\"axqc-graph\">"
       << ScriptSafe(ExplorerData(r, g, named)
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
       << "</script></section>\n";
  }
  os << "</main>\n<script>" << kJs << "</script>\n</body></html>\n";
  return head + "<nav id=\"toc\"><b>Contents</b><ol>" + toc.str() + "</ol></nav>\n" + os.str();
}

std::string HtmlReportScriptHash() {
  static const std::string hash = [] {
    const std::string hex = Sha256Hex(kJs);
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string b64;
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
      const auto at = [&](std::size_t k) {
        return k < bytes.size() ? static_cast<unsigned>(static_cast<unsigned char>(bytes[k])) : 0U;
      };
      const unsigned v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
      b64 += kB64[(v >> 18) & 63];
      b64 += kB64[(v >> 12) & 63];
      b64 += i + 1 < bytes.size() ? kB64[(v >> 6) & 63] : '=';
      b64 += i + 2 < bytes.size() ? kB64[v & 63] : '=';
    }
    return "'sha256-" + b64 + "'";
  }();
  return hash;
}

std::string HtmlReportCsp() {
  return "default-src 'none'; script-src " + HtmlReportScriptHash() +
         "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";
}

}  // namespace axqc
