// The approval card in the browser (an anywidget ESM module). Why it works this
// way is in approval_card.py: no control here is synced as widget state; each
// answer is ONE custom message (model.send) that carries the decision together
// with the whole form (both trust boxes, the Deny reason, every edited text),
// read from the page at the moment of the click. The diff view (unified or side
// by side, preview or all lines) is kept here and never goes to the kernel.
//
// The kernel sends HTML only for what it escaped itself (heading, arguments,
// diff, record); everything this module adds is a text node or a form value.

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) el.append(child);
  }
  return el;
}

function button(label, title, kind, onclick) {
  const classes = "taf-button" + (kind ? ` taf-${kind}` : "");
  return h("button", { type: "button", class: classes, title, onclick }, label);
}

function trusted(html) {
  // Only ever HTML the kernel built and escaped (see approval_card.py).
  const box = h("div");
  box.innerHTML = html;
  return box;
}

const VIEWS = [
  ["unified", "Unified", "One column: removed and added lines"],
  ["side-by-side", "Side by side", "Old and new next to each other"],
];

let cards = 0;

function render({ model, el }) {
  const id = `taf-card-${++cards}`;
  // A region named by its heading, focusable from script: a new card takes the
  // focus so the keyboard reaches Approve in a few Tabs, not through the sidebar.
  const root = h("div", {
    class: "taf-card",
    role: "region",
    tabindex: "-1",
    "aria-labelledby": `${id}-heading`,
  });
  el.append(root);
  // What this page shows; none of it is sent anywhere.
  const local = { view: "unified", full: null, editors: null, waiting: new Set() };
  let open = null;

  function request(what) {
    if (local.waiting.has(what)) return;
    local.waiting.add(what);
    model.send({ action: "load", what });
  }

  function details() {
    const diff = model.get("diff") || {};
    if (!diff.unified) return trusted(model.get("details"));
    const toggles = new Map();
    const body = h("div", { class: "taf-diff-body" });
    const more = button("", "Render the whole diff (may be slow for huge diffs)", "more", () => {
      request("full-diff");
      paint();
    });
    function paint() {
      const preview = diff[local.view];
      body.replaceChildren(trusted((local.full || diff)[local.view].html));
      body.dataset.view = local.view;
      for (const [view, toggle] of toggles) {
        toggle.setAttribute("aria-pressed", String(view === local.view));
      }
      more.hidden = !preview.truncated || local.full !== null;
      more.disabled = local.waiting.has("full-diff");
      more.textContent = more.disabled ? "Loading all lines…" : `Show all ${preview.total} lines`;
    }
    for (const [view, label, title] of VIEWS) {
      const toggle = button(label, title, "view", () => {
        local.view = view;
        paint();
      });
      toggle.dataset.view = view;
      toggles.set(view, toggle);
    }
    const group = h("div", { class: "taf-views", role: "group", "aria-label": "Diff view" });
    group.append(...toggles.values());
    const area = h("div", { class: "taf-details" }, group, body, more);
    area.repaint = paint;
    paint();
    return area;
  }

  function drawOpen() {
    const heading = trusted(model.get("heading"));
    heading.className = "taf-heading";
    heading.id = `${id}-heading`;
    const shown = details();
    const form = h("div", { class: "taf-form" });
    const boxes = {};
    const trust = model.get("trust") || {};
    if (trust.path || trust.tool) {
      const row = h("div", { class: "taf-trust" });
      for (const key of ["path", "tool"]) {
        if (!trust[key]) continue;
        boxes[key] = h("input", { type: "checkbox", id: `${id}-trust-${key}` });
        boxes[key].dataset.trust = key;
        row.append(h("label", { for: boxes[key].id }, boxes[key], " ", trust[key]));
      }
      form.append(row);
    }
    const unavailable = model.get("modify");
    const approve = button("Approve", "Run this call exactly as proposed", "approve", () =>
      answer({ action: "approve" }),
    );
    const modify = button(
      "Modify",
      unavailable || "Edit the proposed content or arguments, then run your version",
      "modify",
      () => openEditors(),
    );
    if (unavailable) {
      modify.disabled = true;
      modify.dataset.unavailable = "true";
    }
    const deny = button("Deny", "Refuse this call; the model is told why", "deny", () =>
      openReason(),
    );
    const buttons = h("div", { class: "taf-buttons" }, approve, modify, deny);
    const panel = h("div", { class: "taf-panel", hidden: true });
    const status = h("div", { class: "taf-status", role: "status" });
    form.append(buttons, panel, status);
    root.append(heading, shown, form);
    return { shown, form, boxes, buttons, panel, status, modify, deny, error: null };
  }

  function answer(message) {
    // The controls are disabled while the kernel answers; the focus waits on the
    // card itself instead of falling to <body>, and moves to the record after.
    if (root.contains(document.activeElement)) root.focus();
    // The whole form goes with the decision, as the page shows it right now.
    message.trust_path = Boolean(open.boxes.path && open.boxes.path.checked);
    message.trust_tool = Boolean(open.boxes.tool && open.boxes.tool.checked);
    busy(true);
    model.send(message);
  }

  function busy(flag) {
    for (const control of open.form.querySelectorAll("button, input, textarea")) {
      control.disabled = flag || control.dataset.unavailable === "true";
    }
    open.status.textContent = flag ? "Sent; waiting for the kernel…" : "";
  }

  function showPanel(items, focus) {
    open.panel.replaceChildren(...items);
    open.panel.hidden = false;
    open.buttons.hidden = true;
    if (focus) focus.focus();
  }

  function closePanel(focus) {
    open.panel.replaceChildren();
    open.panel.hidden = true;
    open.buttons.hidden = false;
    open.error = null;
    focus.focus();
  }

  function onKeys(confirm, cancel, enterConfirms) {
    return (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        cancel.click();
      } else if (event.key === "Enter" && enterConfirms) {
        event.preventDefault();
        confirm.click();
      }
    };
  }

  function openReason() {
    const input = h("input", {
      type: "text",
      id: `${id}-reason`,
      class: "taf-reason",
      placeholder: "optional: why, so the model can do better",
    });
    const confirm = button("Deny", "Refuse the call with this reason", "deny", () =>
      answer({ action: "deny", reason: input.value }),
    );
    confirm.classList.add("taf-confirm");
    const cancel = button("Cancel", "Back to Approve / Modify / Deny", "", () =>
      closePanel(open.deny),
    );
    input.addEventListener("keydown", onKeys(confirm, cancel, true));
    const label = h("label", { for: input.id, class: "taf-label" }, "Reason");
    showPanel([label, input, h("div", { class: "taf-buttons" }, confirm, cancel)], input);
  }

  function openEditors() {
    if (local.editors === null) {
      request("editors");
      const loading = h("div", { class: "taf-status" }, "Loading the proposed text…");
      const cancel = button("Cancel", "Back to Approve / Modify / Deny", "", () =>
        closePanel(open.modify),
      );
      showPanel([loading, cancel], cancel);
      return;
    }
    const areas = new Map();
    const items = [];
    const editable = local.editors.files || [
      { path: null, label: "Arguments (JSON)", text: local.editors.arguments },
    ];
    editable.forEach((file, index) => {
      const area = h("textarea", {
        id: `${id}-edit-${index}`,
        class: "taf-editor",
        spellcheck: "false",
        rows: file.path === null ? 12 : 18,
      });
      area.value = file.text;
      area.dataset.path = file.path === null ? "" : file.path;
      areas.set(file.path, area);
      items.push(h("label", { for: area.id, class: "taf-label" }, file.label), area);
    });
    const error = h("div", { class: "taf-error", role: "alert" });
    const apply = button("Apply", "Run the call with your version", "apply", () => {
      const message = { action: "modify" };
      if (local.editors.files) {
        message.files = Object.create(null);
        for (const [path, area] of areas) message.files[path] = area.value;
      } else {
        message.arguments = areas.get(null).value;
      }
      error.textContent = "";
      answer(message);
    });
    const cancel = button("Cancel", "Back to Approve / Modify / Deny", "", () =>
      closePanel(open.modify),
    );
    for (const area of areas.values()) area.addEventListener("keydown", onKeys(apply, cancel));
    showPanel([...items, error, h("div", { class: "taf-buttons" }, apply, cancel)], items[1]);
    open.error = error;
  }

  function drawClosed() {
    const record = trusted(model.get("record"));
    record.className = "taf-record";
    record.tabIndex = -1;
    const heading = trusted(model.get("heading"));
    heading.className = "taf-heading";
    heading.id = `${id}-heading`;
    const folded = h("details", { class: "taf-folded" }, h("summary", {}, "Details"));
    folded.append(heading, details());
    root.append(record, folded);
  }

  function draw() {
    const focused = root.contains(document.activeElement);
    root.replaceChildren();
    root.dataset.state = model.get("closed") ? "closed" : "open";
    if (model.get("closed")) {
      open = null;
      drawClosed();
      if (focused) root.querySelector(".taf-record").focus();
    } else {
      open = drawOpen();
    }
  }

  // Someone typing (a cell's editor, another card's reason) keeps the focus.
  function typingElsewhere() {
    const active = document.activeElement;
    if (!active || active === document.body || root.contains(active)) return false;
    return active.matches("input, textarea, select, [contenteditable=''], [contenteditable=true]");
  }

  function takeFocus(tries) {
    // The output area attaches the card to the page a moment after render().
    if (!root.isConnected) {
      if (tries > 0) setTimeout(() => takeFocus(tries - 1), 50);
      return;
    }
    if (!typingElsewhere()) root.focus();
  }

  function onMessage(message) {
    if (message === null || typeof message !== "object") return;
    if (message.loaded === "full-diff") {
      local.full = message;
      local.waiting.delete("full-diff");
      for (const area of root.querySelectorAll(".taf-details")) area.repaint?.();
    } else if (message.loaded === "editors") {
      local.editors = message;
      local.waiting.delete("editors");
      if (open !== null && !open.panel.hidden && open.panel.querySelector(".taf-editor") === null) {
        if (open.panel.textContent.startsWith("Loading")) openEditors();
      }
    } else if (typeof message.error === "string" && open !== null) {
      busy(false);
      if (open.error !== null) open.error.textContent = message.error;
    }
  }

  // Keys meant for the card stay in the card: JupyterLab's notebook shortcuts
  // (Enter, A, B, D D, ...) would otherwise act on the cell instead.
  root.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target.matches("input[type=text], textarea");
    const pressing = target.matches("button, input, summary") && [" ", "Enter"].includes(event.key);
    if (typing || pressing) event.stopPropagation();
  });
  model.on("change:closed", draw);
  model.on("msg:custom", onMessage);
  draw();
  if (!model.get("closed")) takeFocus(40);
  return () => {
    model.off("change:closed", draw);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
