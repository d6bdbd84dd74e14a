// The gestures' part inside the page, in an isolated world of its own (`gestures.rs`): the page's
// scripts cannot see, call or replace anything here, and the DOM events they share with it are
// the browser's own. Three jobs:
//
// - The episode's clipboard: what a copy or cut puts on it (the page's own data when its handler
//   set some, else the selection) goes to the server through a binding only this world has; a
//   copy never reaches the browser's clipboard, which other episodes on the browser paste from.
// - The open dropdown: a native <select>'s popup, which the headless shell's frames never show, drawn
//   where a browser draws it, in a closed shadow root in the top layer.
// - Finding the <select> (or picker) under a point and the option a label names.
(() => {
  if (globalThis.__gestures) return;
  const BINDING = '__browserenvCopied';
  const MAX_COPY_CHARS = 262144;
  const MAX_ROWS = 20;
  const MAX_LABELS = 40;
  const st = {
    // Set by the server just before it writes the browser's clipboard itself (`setClipboard`).
    writing: null,
    // The cut the server's own key press makes: the browser's cut, under the server's lock.
    ownCut: false,
    // Set by the server around a copy or cut pressed in a secret field (the probe's rule, marks
    // included): nothing is copied or cut, as the browser does in a password field.
    secretFocus: false,
    // The dropdown drawn: its <select>, the highlighted option's index, its host element.
    select: null,
    highlight: -1,
    host: null,
    root: null,
  };
  const clean = (text) => String(text || '').replace(/\s+/g, ' ').trim();
  const report = (kind, text) => {
    try {
      globalThis[BINDING](JSON.stringify({ kind, text: String(text).slice(0, MAX_COPY_CHARS) }));
    } catch (e) {
      // No binding (a document the server did not prepare): nothing to report to.
    }
  };
  const selectionText = () => {
    const el = document.activeElement;
    if (el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) {
      // The browser copies nothing out of a password field.
      if (el.tagName === 'INPUT' && (el.getAttribute('type') || '').toLowerCase() === 'password') return null;
      try {
        if (el.selectionStart !== null && el.selectionEnd > el.selectionStart) {
          return el.value.slice(el.selectionStart, el.selectionEnd);
        }
      } catch (e) {
        // An input without a selection (a checkbox): fall through to the document's.
      }
    }
    const text = String(getSelection());
    return text === '' ? null : text;
  };
  // First on the way in: the server's own write takes the event for itself; anything else gets
  // a listener that runs after the page's (the last one on the window on the way out).
  const onClipboard = (event) => {
    if (event.type === 'copy' && st.writing !== null) {
      event.clipboardData.setData('text/plain', st.writing);
      st.writing = null;
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    if (st.secretFocus) {
      event.clipboardData.clearData();
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    const ownCut = event.type === 'cut' && st.ownCut;
    window.addEventListener(event.type, (last) => {
      const text = last.defaultPrevented
        ? last.clipboardData.getData('text/plain')
        : selectionText();
      if (text !== null) report(last.type, text);
      if (last.type === 'copy') {
        // What reaches the browser's clipboard is nothing: the copy is the episode's.
        last.clipboardData.clearData();
        last.preventDefault();
      } else if (!ownCut && !last.defaultPrevented && text !== null) {
        // A script's cut: the text leaves as a delete, the browser's clipboard untouched.
        last.clipboardData.clearData();
        last.preventDefault();
        document.execCommand('delete');
      }
    }, { once: true });
  };
  // A middle click pastes Linux's primary selection, which the whole browser shares (other
  // episodes' and sessions' too) and any selection fills (a password shown, selected): no paste
  // comes from it. Blink pastes while it handles the button's release, after `mouseup`.
  let middleUp = false;
  window.addEventListener('mouseup', (event) => {
    if (event.button !== 1) return;
    middleUp = true;
    setTimeout(() => { middleUp = false; }, 0);
  }, true);
  window.addEventListener('paste', (event) => {
    if (!middleUp) return;
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);
  window.addEventListener('copy', onClipboard, true);
  window.addEventListener('cut', onClipboard, true);

  // ---------------------------------------------------------------- the <select> under a point

  const deepAt = (x, y) => {
    let el = document.elementFromPoint(x, y);
    for (let depth = 0; el && el.shadowRoot && depth < 16; depth++) {
      const inner = el.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === el) break;
      el = inner;
    }
    return el;
  };
  const describe = (el) => {
    if (!el) return 'nothing';
    const tag = el.tagName.toLowerCase();
    const text = clean(el.innerText || el.value || '').slice(0, 40);
    return text ? `<${tag}> "${text}"` : `<${tag}>`;
  };
  const shown = (option) => {
    try {
      return getComputedStyle(option).display !== 'none';
    } catch (e) {
      return true;
    }
  };
  const enabled = (option) => !option.disabled
    && !(option.parentElement && option.parentElement.tagName === 'OPTGROUP' && option.parentElement.disabled)
    && shown(option);
  const options = (select) => Array.from(select.options);
  // An option's place among the ones the keyboard reaches (HOME, then DOWN this many times).
  const rankOf = (select, index) => options(select).slice(0, index).filter(enabled).length;
  const isOpen = (select) => {
    try {
      return select.matches(':open');
    } catch (e) {
      return false;
    }
  };
  const PICKERS = ['date', 'time', 'datetime-local', 'month', 'week', 'color'];

  // ---------------------------------------------------------------- the dropdown drawn

  const remove = () => {
    if (st.host) st.host.remove();
    st.host = null;
    st.root = null;
    st.select = null;
    st.highlight = -1;
  };
  const firstEnabled = (list, from, step) => {
    for (let i = from; i >= 0 && i < list.length; i += step) if (enabled(list[i])) return i;
    return -1;
  };
  // The keys a person presses in the open popup, as the browser moves its highlight.
  const navigate = (key, repeat, rows) => {
    const list = options(st.select);
    for (let n = 0; n < repeat; n++) {
      const at = st.highlight;
      let next = -1;
      if (key === 'DOWN') next = firstEnabled(list, at + 1, 1);
      else if (key === 'UP') next = firstEnabled(list, at - 1, -1);
      else if (key === 'HOME' || key === 'PAGE_UP' && at <= rows) next = firstEnabled(list, 0, 1);
      else if (key === 'END' || key === 'PAGE_DOWN' && at + rows >= list.length) next = firstEnabled(list, list.length - 1, -1);
      else if (key === 'PAGE_DOWN') next = firstEnabled(list, at + rows - 1, 1);
      else if (key === 'PAGE_UP') next = firstEnabled(list, at - rows + 1, -1);
      else if (key.length === 1) {
        for (let k = 1; k <= list.length; k++) {
          const i = (at + k) % list.length;
          if (enabled(list[i]) && clean(list[i].label).toUpperCase().startsWith(key)) {
            next = i;
            break;
          }
        }
      }
      if (next >= 0) st.highlight = next;
    }
  };
  const ensureHost = () => {
    if (st.host && st.host.isConnected) return;
    const host = document.createElement('browserenv-dropdown');
    host.setAttribute('popover', 'manual');
    st.root = host.attachShadow({ mode: 'closed' });
    st.host = host;
    document.documentElement.appendChild(host);
  };
  const draw = (select) => {
    const list = options(select);
    const rows = [];
    let group = null;
    for (let i = 0; i < list.length; i++) {
      const option = list[i];
      if (!shown(option)) continue;
      const parent = option.parentElement;
      const inGroup = parent && parent.tagName === 'OPTGROUP';
      if (inGroup && parent !== group) {
        group = parent;
        rows.push({ index: -1, label: clean(parent.label), group: true, enabled: false });
      } else if (!inGroup) {
        group = null;
      }
      rows.push({ index: i, label: clean(option.label), group: false, enabled: enabled(option), inGroup });
    }
    const style = getComputedStyle(select);
    const size = parseFloat(style.fontSize) || 13.33;
    const height = Math.max(16, Math.round(size * 1.25) + 2);
    const r = select.getBoundingClientRect();
    const viewport = [innerWidth, innerHeight];
    const below = viewport[1] - r.bottom;
    const above = r.top;
    const wanted = Math.min(rows.length, MAX_ROWS);
    const fitBelow = Math.floor((below - 2) / height);
    const fitAbove = Math.floor((above - 2) / height);
    const down = fitBelow >= wanted || fitBelow >= fitAbove;
    const visible = Math.max(1, Math.min(wanted, down ? fitBelow : fitAbove));
    // The highlighted row in view, as the browser scrolls its list.
    const at = Math.max(0, rows.findIndex((row) => row.index === st.highlight));
    const first = Math.min(Math.max(0, at - visible + 1), Math.max(0, rows.length - visible));
    const shownRows = rows.slice(first, first + visible);
    ensureHost();
    const host = st.host;
    const measure = document.createElement('canvas').getContext('2d');
    measure.font = `${style.fontWeight} ${size}px ${style.fontFamily}`;
    const widest = Math.max(0, ...rows.map((row) => measure.measureText(row.label).width + (row.inGroup ? 24 : 12)));
    const width = Math.min(viewport[0], Math.max(Math.round(r.width), Math.ceil(widest) + 4));
    const boxHeight = visible * height + 2;
    const left = Math.max(0, Math.min(Math.round(r.left), viewport[0] - width));
    const top = down ? Math.round(r.bottom) : Math.round(r.top) - boxHeight;
    host.style.cssText = `all: initial !important; position: fixed !important; display: block !important;
      inset: auto !important; left: ${left}px !important; top: ${top}px !important; width: ${width}px !important;
      height: ${boxHeight}px !important; margin: 0 !important; padding: 0 !important;
      border: 0 !important; overflow: visible !important;
      z-index: 2147483647 !important; opacity: 1 !important; visibility: visible !important;`;
    const font = `${style.fontWeight} ${size}px ${style.fontFamily}`;
    const css = `
      .list { box-sizing: border-box; width: ${width}px; height: ${boxHeight}px; background: #fff;
        color: #000; border: 1px solid #767676; font: ${font}; overflow: hidden; cursor: default;
        box-shadow: 0 2px 6px rgba(0, 0, 0, 0.25); }
      .row { box-sizing: border-box; height: ${height}px; line-height: ${height}px; padding: 0 6px;
        white-space: pre; overflow: hidden; text-overflow: ellipsis; }
      .row.group { font-weight: bold; }
      .row.in { padding-left: 18px; }
      .row.off { color: #8c8c8c; }
      .row.hl { background: #1967d2; color: #fff; }`;
    const html = shownRows.map((row) => {
      const classes = ['row', row.group ? 'group' : '', row.inGroup ? 'in' : '',
        !row.group && !row.enabled ? 'off' : '', row.index === st.highlight ? 'hl' : ''].join(' ');
      const text = row.label.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
      return `<div class="${classes}">${text || '&nbsp;'}</div>`;
    }).join('');
    st.root.innerHTML = `<style>${css}</style><div class="list">${html}</div>`;
    try {
      if (!host.matches(':popover-open')) host.showPopover();
    } catch (e) {
      // No top layer (an old engine): the highest z-index does.
    }
    return {
      box: [left, top, width, boxHeight],
      rows: shownRows.map((row, i) => ({
        index: row.index,
        label: row.label,
        enabled: !row.group && row.enabled,
        rank: row.group ? null : rankOf(select, row.index),
        box: [left, top + 1 + i * height, width, height],
      })),
      highlight: st.highlight,
      rowHeight: height,
      visible,
    };
  };

  const api = {
    // The server writes the browser's clipboard: a copy of `text` only this world sees.
    setClipboard(text) {
      st.writing = text;
      // The browser copies nothing while the selection is in a password field (the command is
      // disabled there), so a paste into one would find the clipboard unset: the selection
      // leaves the field for the copy, which stays focused, and its caret is put back after.
      let field = document.activeElement;
      for (let depth = 0; field && field.shadowRoot && field.shadowRoot.activeElement && depth < 16; depth++) {
        field = field.shadowRoot.activeElement;
      }
      const inPassword = field && field.tagName === 'INPUT' && field.type === 'password';
      const caret = inPassword ? [field.selectionStart, field.selectionEnd, field.selectionDirection] : null;
      if (caret) getSelection().collapse(document.body || document.documentElement, 0);
      let done = false;
      try {
        done = document.execCommand('copy');
      } finally {
        if (caret) field.setSelectionRange(caret[0], caret[1], caret[2]);
      }
      const taken = st.writing === null;
      st.writing = null;
      return done && taken;
    },
    ownCut(on) {
      st.ownCut = on;
      return true;
    },
    secretFocus(on) {
      st.secretFocus = on;
      return true;
    },
    // The dropdown as it is now, drawn: `nav` ({key, repeat}) moves its highlight as keys pressed
    // in the popup do, `hover` (an option's index) as the pointer does. Null when none is open.
    dropdown(nav) {
      let select = null;
      try {
        select = document.querySelector('select:open');
      } catch (e) {
        select = null;
      }
      if (!select || select.multiple || select.size > 1) {
        remove();
        return null;
      }
      if (st.select !== select) {
        st.select = select;
        st.highlight = select.selectedIndex >= 0 && enabled(select.options[select.selectedIndex])
          ? select.selectedIndex : firstEnabled(options(select), 0, 1);
      }
      if (nav && nav.key) navigate(nav.key, nav.repeat || 1, MAX_ROWS);
      if (nav && Number.isInteger(nav.hover)) st.highlight = nav.hover;
      return draw(select);
    },
    // The <select> (or picker input) under (x, y) (the page's pixels) and the option `label`
    // names, or why not; `where` is the point as the action gave it (the picture's pixels).
    selectAt(x, y, label, where) {
      const inDropdown = st.host && st.select && (() => {
        const r = st.host.getBoundingClientRect();
        return x >= r.left && x < r.right && y >= r.top && y < r.bottom;
      })();
      const el = inDropdown ? st.select : deepAt(x, y);
      const picker = el && el.tagName === 'INPUT' && PICKERS.includes((el.type || '').toLowerCase()) ? el : null;
      if (picker) {
        if (picker.disabled || picker.readOnly) return { error: `the <input type=${picker.type}> at ${where} is disabled` };
        return { picker: picker.type };
      }
      const select = el && el.closest ? el.closest('select') : null;
      if (!select) return { error: `no <select> at ${where}: the pointer is over ${describe(el)}` };
      if (select.disabled) return { error: `the <select> at ${where} is disabled` };
      const list = options(select);
      const wanted = clean(label);
      let index = list.findIndex((o) => clean(o.label) === wanted);
      if (index < 0) {
        const folded = list.map((o) => clean(o.label).toLowerCase());
        const matches = folded.filter((l) => l === wanted.toLowerCase()).length;
        if (matches === 1) index = folded.indexOf(wanted.toLowerCase());
      }
      if (index < 0) {
        return {
          missing: true,
          labels: list.slice(0, MAX_LABELS).map((o) => clean(o.label)),
          more: Math.max(0, list.length - MAX_LABELS),
        };
      }
      if (!enabled(list[index])) return { error: `the option "${clean(list[index].label)}" is disabled` };
      const listbox = select.multiple || select.size > 1;
      let optionBox = null;
      if (listbox) {
        list[index].scrollIntoView({ block: 'nearest' });
        const o = list[index].getBoundingClientRect();
        optionBox = [o.left, o.top, o.width, o.height];
      }
      return {
        index,
        rank: rankOf(select, index),
        listbox,
        open: isOpen(select),
        chosen: select.selectedIndex === index,
        optionBox,
      };
    },
    // The last resort, when the page keeps its popup from opening: chosen by script, its `input`
    // and `change` fired as a choice fires them.
    chooseByScript(x, y, index) {
      const select = st.select || (deepAt(x, y) || {}).closest?.('select');
      if (!select) return false;
      select.focus();
      if (select.selectedIndex === index) return true;
      select.selectedIndex = index;
      select.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      select.dispatchEvent(new Event('change', { bubbles: true }));
      return true;
    },
    // A picker input's value set as a person's choice in its picker sets it.
    setPicker(x, y, value, where) {
      const el = deepAt(x, y);
      if (!el || el.tagName !== 'INPUT') return { error: `no picker at ${where}` };
      el.focus();
      el.value = value;
      if (el.value !== value) return { error: `"${value}" is not a value of <input type=${el.type}> (it took "${el.value}")` };
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      return { ok: true };
    },
  };
  Object.freeze(api);
  Object.defineProperty(globalThis, '__gestures', { value: api, enumerable: false });
})();
