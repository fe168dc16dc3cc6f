// codeloop console: the live parts. Loaded as a module from 'self' (the page's CSP allows no
// inline script). Text from the server only ever goes into textContent, never innerHTML.

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

function localTimes(root = document) {
  for (const t of $$("time[datetime]", root)) {
    const d = new Date(t.dateTime);
    if (!Number.isNaN(d.getTime())) t.textContent = d.toLocaleString();
  }
}

function setPending(count) {
  const title = $("title");
  const base = title.dataset.base || document.title;
  document.title = (count > 0 ? `(${count}) ` : "") + base;
  const badge = $("#pending-count");
  if (badge) { badge.dataset.count = String(count); badge.textContent = `${count} pending`; }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// --- approvals: the decision shows only once the server answered
function wireDecisions() {
  for (const form of $$("form.decide")) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = ev.submitter;
      const data = new URLSearchParams(new FormData(form, button));
      const out = $("output.result", form);
      const buttons = $$("button", form);
      buttons.forEach((b) => { b.disabled = true; });
      out.textContent = "sending…";
      let status = 0, message = "";
      try {
        const r = await fetch(form.action, { method: "POST", body: data, credentials: "same-origin",
                                             headers: { Accept: "application/json" } });
        status = r.status;
        const answer = await r.json();
        message = answer.message;
        if (typeof answer.at === "number" && typeof answer.atText === "string") {
          // who decided first, and when: in the viewer's zone, as every other time on the page
          message = message.replace(answer.atText, new Date(answer.at * 1000).toLocaleString());
          out.dataset.at = String(answer.at);
        }
      } catch (e) {
        message = `not sent: ${e}`;
      }
      out.textContent = message;
      document.body.dataset.decided = String(status);
      streamRun(true);  // what the answer made the run do (it ran on the server meanwhile)
      const card = form.closest("[data-pending]");
      if (status >= 200 && status < 300 || status === 409) {
        card.classList.add(status === 409 ? "already" : "decided");
        card.removeAttribute("data-pending");
        const badge = $("#pending-count");
        setPending(Math.max(0, Number(badge ? badge.dataset.count : 1) - 1));
      } else {
        buttons.forEach((b) => { b.disabled = false; });
      }
    });
  }
}

function wireKeys() {
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA") return;
    const card = $("[data-pending]");
    if (!card) return;
    if (ev.key === "a") { ev.preventDefault(); $("button.approve", card).click(); }
    if (ev.key === "d") { ev.preventDefault(); $("button.deny", card).click(); }
  });
}

// --- a run's events, live over the API's SSE stream
function tailBlock(text, cls, tail, allHref) {
  const frag = document.createDocumentFragment();
  let lines = text.split("\n");
  if (text.endsWith("\n")) lines.pop();
  const hidden = Math.max(0, lines.length - tail);
  if (hidden) {
    const a = el("a", "show-all", `${hidden} earlier lines hidden: show all`);
    a.href = allHref;
    frag.append(a);
    lines = lines.slice(hidden);
  }
  frag.append(el("pre", cls, lines.join("\n")));
  return frag;
}

function summary(e) {
  for (const k of ["command", "path", "content", "message", "reason"]) {
    if (typeof e[k] === "string" && !(e.type === "readFile" && k === "content")) return e[k];
  }
  return "";
}

// Syntax colouring of diff lines: a small tokenizer (keywords, strings, comments, numbers) that
// only splits a line's text into spans with classes; the text itself stays textContent.
const KEYWORDS = new Set(("def class return if elif else for while in import from as with try except finally raise " +
  "lambda yield async await pass break continue not and or is None True False function const let var new this " +
  "typeof instanceof export default switch case package func go defer struct type interface map chan fn impl " +
  "pub use mod match mut let static public private protected void int char long double float bool boolean " +
  "include then fi do done esac echo local").split(" "));
const TOKEN = /(#.*$|\/\/.*$)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;
const COMMENT_HASH = new Set(["python", "bash", "toml"]);

function colour(span, lang) {
  const text = span.textContent;
  if (!lang || text.length > 2000) return;
  const sign = text[0];
  const code = text.slice(1);
  const frag = document.createDocumentFragment();
  frag.append(sign);
  let last = 0;
  for (const m of code.matchAll(TOKEN)) {
    let cls = null;
    if (m[1] && (m[1][0] !== "#" || COMMENT_HASH.has(lang))) cls = "tok-com";
    else if (m[2]) cls = "tok-str";
    else if (m[3]) cls = "tok-num";
    else if (m[4] && KEYWORDS.has(m[4])) cls = "tok-kw";
    if (!cls) continue;
    frag.append(code.slice(last, m.index), el("span", cls, m[0]));
    last = m.index + m[0].length;
  }
  frag.append(code.slice(last));
  span.textContent = "";
  span.append(frag);
}

function colourDiffs(root = document) {
  for (const pre of $$("pre.diff[data-lang]", root)) {
    if (pre.dataset.coloured) continue;
    pre.dataset.coloured = "1";
    for (const span of $$(":scope > span", pre)) colour(span, pre.dataset.lang);
  }
}

function diffBlock(diff) {
  if (!diff) return null;
  if (diff.hidden) return el("p", "hidden-content", diff.hidden);
  const pre = el("pre", "diff");
  pre.dataset.lang = diff.lang || "";
  for (const [sign, line] of diff.lines) {
    pre.append(el("span", sign === "+" ? "add" : "del", sign + line), "\n");
  }
  return pre;
}

function eventItem(seq, e, cfg) {
  const ok = e.success === undefined ? "" : (e.success ? " ok" : " failed");
  const li = el("li", `ev ev-${String(e.type || "event").replace(/[^A-Za-z]/g, "")}${ok}`);
  li.id = `ev-${seq}`;
  li.dataset.seq = String(seq);
  const head = el("div", "ev-head");
  head.append(el("span", "ev-type", String(e.type || "event")), " ", el("span", "ev-op", e.operationId || ""), " ");
  const t = el("time", null, e.timestamp || "");
  t.dateTime = e.timestamp || "";
  head.append(t);
  li.append(head, el("div", "ev-body", summary(e)));
  for (const k of ["stdout", "stderr", "error"]) {
    if (typeof e[k] === "string" && e[k]) li.append(tailBlock(e[k], `out ${k}`, cfg.tail, cfg.allHref));
  }
  if (e.type === "approvalRequired") {
    const rule = el("div", "ev-body", "rule: ");
    rule.append(el("code", null, (e.details && e.details.policy) || ""));
    li.append(rule);
  }
  if (["createFile", "editFile", "deleteFile"].includes(e.type)) {
    // The same matching as views.match_diffs: the operation's id, else the next of its type and path.
    const i = cfg.diffs.findIndex((d) => (e.operationId ? d.op === e.operationId
                                          : d.op === null && d.type === e.type && d.path === e.path));
    if (i >= 0) li.append(diffBlock(cfg.diffs.splice(i, 1)[0]));
  }
  localTimes(li);
  colourDiffs(li);
  return li;
}

let streaming = false;
let lastSeq = null;
let cfg = null;  // parsed once: the live matching of diffs consumes it
let hidden = 0;

function streamRun(force = false) {
  const data = $("#run-data");
  if (!data || streaming) return;
  if (cfg === null) { cfg = JSON.parse(data.textContent); hidden = cfg.hidden; }
  if (!cfg.live && !force) return;
  streaming = true;
  const list = $("#events");
  // Each event is appended as it arrives (one small task per SSE message; the browser
  // batches style and layout per frame by itself), and only the newest cfg.shown items stay
  // in the page (older ones are behind "show all"), so a long run stays light.
  const add = (seq, e) => {
    list.append(eventItem(seq, e, cfg));
    if (cfg.shown !== null && list.children.length > cfg.shown) {
      list.firstElementChild.remove();
      hidden++;
      let more = $("#events-more");
      if (!more) {
        more = el("a", "show-all");
        more.id = "events-more";
        more.href = cfg.allHref;
        list.before(more);
      }
      more.textContent = `${hidden} earlier events hidden: show all`;
    }
  };
  if (lastSeq === null) lastSeq = cfg.after;
  const source = new EventSource(`${cfg.stream}?after=${lastSeq}`);
  source.onmessage = null;
  const onEvent = (ev) => {
    lastSeq = Number(ev.lastEventId);
    add(lastSeq, JSON.parse(ev.data));
  };
  for (const type of ["message", "userMessage", "createFile", "readFile", "editFile", "deleteFile", "shell",
                      "approvalRequired", "policyDenied", "error"]) {
    source.addEventListener(type, onEvent);
  }
  source.addEventListener("end", (ev) => {
    source.close();
    streaming = false;
    const state = JSON.parse(ev.data).state;
    const s = $("#run-state");
    if (s) { s.textContent = state; s.className = `state ${state}`; }
    document.body.dataset.runEnded = state;
    if (state === "awaiting_approval") location.reload();  // the card needs the server's pending call
  });
}

localTimes();
colourDiffs();
wireDecisions();
wireKeys();
streamRun();
document.body.dataset.ready = "1";
