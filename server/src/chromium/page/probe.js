// Installed in every document of an environment page (before the page's own scripts run) and
// re-run, idempotently, on tabs we attach to late. It only observes: it counts in-flight fetch/XHR
// requests and short timers, notes the last DOM mutation, and stops clicks on links with forbidden
// schemes. `settle` resolves once the page is quiet and two frames have been painted.
(() => {
  if (window.__browserenv) return;
  const nativeSetTimeout = window.setTimeout.bind(window);
  const nativeClearTimeout = window.clearTimeout.bind(window);
  // The settle's frames: a page that replaces requestAnimationFrame with a timer (old polyfills)
  // would make them look like its own timers and changes, and no step quiet.
  const nativeRequestAnimationFrame = window.requestAnimationFrame.bind(window);
  // The browser's clock: a replayed page's own runs as the page goes (server/src/archive/clock.js)
  // and would stretch or shrink the settle's quiet.
  const browserNow = performance.now.bind(performance);
  const state = {
    requests: 0,
    timers: new Set(),
    // In a document installed into before it is parsed (every new one), nothing yet; in one
    // attached late, now: what came before is unknown.
    lastMutation: document.readyState === 'loading' ? -Infinity : browserNow(),
    // Orders the page's changes and the settle's frames: a counter, not a clock, whose 0.1 ms
    // steps would make a change and the frame right after it look simultaneous.
    order: 0,
    // The last thing the page did that may change its picture (a DOM change, a short timer's
    // callback that may have drawn a canvas, the end of a request), in `order`. The settle's
    // frames count from it.
    lastChange: 0,
    // Called on each such change: a settle in progress asks for frames again.
    wakers: new Set(),
    // The first links stopped since the last step (as [start of href, its length]), and how
    // many more: a page can click thousands of them.
    blocked: [],
    blockedMore: 0,
    // Fields a person marked as holding a secret (a one-time code in a plain text field), and
    // each secret field's number: what it holds is read back by number, so a field's new value
    // replaces its old one on the server (`Secrets::hold`).
    marked: new WeakSet(),
    fieldNumbers: new WeakMap(),
    fields: 0,
    // Every element that was ever a secret field (a password field switched to "show" stays
    // one), and the closed shadow roots the page made (`attachShadow`), to look into them.
    ever: new WeakSet(),
    closedRoots: new WeakMap(),
    // What trusted input (typing, keys, a paste, a drop: whatever an action did) left in a
    // secret field since the server last took it: `[element, value, opaque]`, one entry per
    // field while each value starts the next (the values on the way are its starts).
    inputs: [],
    // The last click on a link or submission of a form, whose default action (a navigation of
    // this tab) the settle expects the browser to be asked for, unless a handler prevented it:
    // read, and forgotten, by the next settle (`navigationExpected`).
    lastDefault: null,
    // Everything the page did on its own, counted: a change (above), and any callback of its
    // timers, intervals and animation frames. A page loaded ahead for the next episode is handed
    // over only if this has not moved since it was pictured (`pristine`).
    activity: 0,
  };
  // Timers longer than this are polling or idle work, not an effect of the action.
  const SHORT_TIMER_MS = 1000;
  // Incidents kept per step and characters kept of each (browser.rs: INCIDENTS_KEPT,
  // INCIDENT_TEXT_CHARS; a test holds them equal).
  const MAX_INCIDENTS = 10;
  const MAX_INCIDENT_CHARS = 200;
  // What the page supplies is cut here, by functions taken before any of its scripts ran (it can
  // replace String.prototype.slice, not these), so a huge title never leaves the renderer; the
  // server cuts again (seam.rs), for a page that ran before the probe. Kept equal to
  // browser.rs's MAX_TITLE_CHARS and MAX_SECRET_BOXES by a test.
  const MAX_TITLE_CHARS = 4096;
  const MAX_SECRET_BOXES = 32;
  const nativeSlice = String.prototype.slice;
  const nativeApply = Reflect.apply;
  // What a task's check reads (`state`) is read with these, whatever the page did to its own
  // (it can replace the prototypes' functions, not these).
  const nativeQuerySelector = Document.prototype.querySelector;
  const nativeInnerText = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'innerText').get;
  const nativeTextContent = Object.getOwnPropertyDescriptor(Node.prototype, 'textContent').get;
  const nativeGetItem = Storage.prototype.getItem;
  const nativeLocalStorage = Object.getOwnPropertyDescriptor(window, 'localStorage')
    || Object.getOwnPropertyDescriptor(Window.prototype, 'localStorage');
  const nativeValues = new Map([HTMLInputElement, HTMLTextAreaElement, HTMLSelectElement]
    .map((kind) => [kind, Object.getOwnPropertyDescriptor(kind.prototype, 'value').get]));
  const cut = (text, max) => (typeof text === 'string' ? nativeApply(nativeSlice, text, [0, max]) : '');
  const nativeStartsWith = String.prototype.startsWith;
  const nativeComposedPath = Event.prototype.composedPath;
  // The most characters of a held secret read back: a `type` action's own limit.
  const MAX_HELD_CHARS = 2000;
  const FORBIDDEN = /^\s*(javascript|file|data|chrome|chrome-untrusted|devtools|view-source|filesystem)\s*:/i;

  const changed = () => {
    state.lastChange = ++state.order;
    state.activity++;
    for (const wake of state.wakers) wake();
  };
  // A callback of the page's that counts as activity when it runs.
  const active = (handler) => function (...args) {
    state.activity++;
    return handler.apply(this, args);
  };

  window.setTimeout = function (handler, delay, ...args) {
    const ms = Number(delay) || 0;
    if (typeof handler !== 'function') {
      return nativeSetTimeout(handler, delay, ...args);
    }
    if (ms > SHORT_TIMER_MS) {
      return nativeSetTimeout(active(handler), delay, ...args);
    }
    const id = nativeSetTimeout(function () {
      state.timers.delete(id);
      try {
        return handler.apply(this, args);
      } finally {
        changed();
      }
    }, ms);
    state.timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) {
    state.timers.delete(id);
    return nativeClearTimeout(id);
  };
  const nativeSetInterval = window.setInterval.bind(window);
  window.setInterval = function (handler, ...rest) {
    return nativeSetInterval(typeof handler === 'function' ? active(handler) : handler, ...rest);
  };
  window.requestAnimationFrame = function (callback) {
    return nativeRequestAnimationFrame(typeof callback === 'function' ? active(callback) : callback);
  };

  // A call counted as a request from its start until its promise settles.
  const counted = (native) => function (...args) {
    state.requests++;
    let settled = false;
    const done = () => {
      if (!settled) {
        settled = true;
        state.requests--;
        changed();
      }
    };
    try {
      const promise = native.apply(this, args);
      promise.then(done, done);
      return promise;
    } catch (error) {
      done();
      throw error;
    }
  };
  if (window.fetch) window.fetch = counted(window.fetch);
  // A response's body is read after its fetch has resolved (`response.json()`): a request too,
  // until it is read, or the page looks quiet while the data it will render is on its way.
  if (window.Response) {
    for (const name of ['json', 'text', 'arrayBuffer', 'blob', 'formData']) {
      const nativeRead = Response.prototype[name];
      if (typeof nativeRead === 'function') Response.prototype[name] = counted(nativeRead);
    }
  }
  const nativeSend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    state.requests++;
    this.addEventListener('loadend', () => {
      state.requests--;
      changed();
    }, { once: true });
    return nativeSend.apply(this, args);
  };

  // The quiet window is for what scripts keep changing (rendering frame by frame, a scheduler's
  // tasks): the parser building the document is not that, and a loaded document is quiet as
  // soon as its scripts are. So changes while the document is still being parsed (`loading`)
  // must be drawn like any other, but start no quiet window; changes from `interactive` on
  // (deferred and module scripts, DOMContentLoaded and load handlers) do. A reset's settle went
  // from 42 to 11 ms (with the navigation window closed at the load: `goto` in seam.rs).
  new MutationObserver(() => {
    if (document.readyState !== 'loading') state.lastMutation = browserNow();
    changed();
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });

  const stopForbidden = (event) => {
    const link = event.target && event.target.closest ? event.target.closest('a[href]') : null;
    if (link && FORBIDDEN.test(link.getAttribute('href'))) {
      event.preventDefault();
      const href = link.getAttribute('href');
      if (state.blocked.length < MAX_INCIDENTS) {
        state.blocked.push([href.slice(0, MAX_INCIDENT_CHARS), href.length]);
      } else {
        state.blockedMore++;
      }
    }
  };
  window.addEventListener('click', stopForbidden, true);
  window.addEventListener('auxclick', stopForbidden, true);

  // A link's click or a form's submission: its default action navigates this tab unless a
  // handler prevents it (read once every handler has run, by the settle). Noted in the capture
  // phase, before the page's handlers can stop the event from reaching us.
  const nativeClosest = Element.prototype.closest;
  const NativeURL = window.URL;
  window.addEventListener('click', (event) => {
    const target = event.target;
    let link = null;
    try {
      link = target && nativeApply(nativeClosest, target, ['a[href], area[href]']);
    } catch (error) {
      link = null; // not an element (a text node, a document)
    }
    if (link) state.lastDefault = { event, link };
  }, true);
  window.addEventListener('submit', (event) => {
    state.lastDefault = { event, form: event.target, submitter: event.submitter };
  }, true);
  // A drag-and-drop the page started since the last press (its `dragstart`, unless a handler
  // prevented it, read once they have all run): the browser's report of it can come tens of
  // milliseconds after the move that started it, and a release sent before it is never heard
  // (server/src/chromium/page/gestures.rs, `late_drag`).
  let dragStart = null;
  window.addEventListener('pointerdown', (event) => { if (event.isTrusted) dragStart = null; }, true);
  // The browser's own events only: a page's made-up dragstart would make a release wait for nothing.
  window.addEventListener('dragstart', (event) => { if (event.isTrusted) dragStart = event; }, true);
  // A navigation of this tab to another document over http(s), from the URL and target a link
  // or form names; a frame or window of another name, a download, a fragment of this document,
  // another scheme (mailto:, the forbidden ones) are not.
  const selfTarget = (name) => !name || name === '_self' || (window.top === window && (name === '_top' || name === '_parent'));
  const leavesDocument = (href) => {
    let url;
    try {
      url = new NativeURL(href, document.baseURI);
    } catch (error) {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    const here = new NativeURL(location.href);
    const sameDocument = url.hash !== '' && url.href.split('#')[0] === here.href.split('#')[0];
    return !sameDocument;
  };
  const baseTarget = () => {
    const base = nativeApply(nativeQuerySelector, document, ['base[target]']);
    return base ? base.getAttribute('target') : '';
  };
  // Whether the last link click or form submission should have asked the browser for a
  // navigation of this tab; forgotten once read.
  const navigationExpected = () => {
    const last = state.lastDefault;
    state.lastDefault = null;
    if (!last || last.event.defaultPrevented) return false;
    if (last.link) {
      const link = last.link;
      if (link.hasAttribute('download')) return false;
      const name = link.hasAttribute('target') ? link.getAttribute('target') : baseTarget();
      return selfTarget(name) && leavesDocument(link.href);
    }
    const form = last.form;
    const submitter = last.submitter;
    const method = ((submitter && submitter.getAttribute('formmethod')) || form.getAttribute('method') || '').toLowerCase();
    if (method === 'dialog') return false;
    const name = (submitter && submitter.hasAttribute('formtarget')) ? submitter.getAttribute('formtarget')
      : form.hasAttribute('target') ? form.getAttribute('target') : baseTarget();
    const action = (submitter && submitter.getAttribute('formaction')) || form.getAttribute('action') || location.href;
    return selfTarget(name) && leavesDocument(action);
  };

  // A field whose value is a secret: a password field, one drawn as discs by CSS (a PIN), or one
  // the page marks as a one-time code, a card secret or a password (autocomplete). The one rule of
  // the recordings' masks (--redact), the text layer's bullets and the typing kept from watchers,
  // agents and recordings (`element.password`).
  const SECRET_AUTOCOMPLETE = /\b(one-time-code|current-password|new-password|cc-number|cc-csc)\b/i;
  // A field a page masks with its own script shows only these in its value.
  const MASKED = /^[\u2022\u25cf\u2217*\u00b7]+$/;
  const isSecretField = (el) => {
    const tag = el.tagName;
    const field = tag === 'INPUT' || tag === 'TEXTAREA';
    if (!field && !el.isContentEditable) return false;
    if (tag === 'INPUT' && ((el.getAttribute('type') || '').toLowerCase() === 'password'
      || SECRET_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || ''))) return true;
    // Drawn as discs by CSS (a PIN, a div made to look like a password field), or masked by the
    // page's own script (bullets in its value).
    if ((el.ownerDocument.defaultView.getComputedStyle(el).webkitTextSecurity || 'none') !== 'none') return true;
    return field && MASKED.test(fieldValue(el));
  };
  // What a field holds, read with the browser's own getters, taken before the page ran: a page
  // can replace `value`, `Map`'s and arrays' iteration, `instanceof`; not these. A getter of the
  // wrong kind of element throws, and the next is tried.
  const valueGetters = [HTMLInputElement, HTMLTextAreaElement, HTMLSelectElement]
    .map((kind) => Object.getOwnPropertyDescriptor(kind.prototype, 'value').get);
  const fieldValue = (el) => {
    for (let i = 0; i < valueGetters.length; i++) {
      try {
        return String(nativeApply(valueGetters[i], el, []));
      } catch (error) {
        // Not this kind of field.
      }
    }
    try {
      return el.isContentEditable ? String(nativeApply(nativeInnerText, el, [])) : '';
    } catch (error) {
      return '';
    }
  };
  // A secret field now, one that ever was (its type switched to show it), or one a person marked.
  const isSecret = (el) => {
    if (state.ever.has(el) || state.marked.has(el)) return true;
    if (!isSecretField(el)) return false;
    state.ever.add(el);
    return true;
  };
  // An element's shadow root, open or closed (the page's closed ones, recorded as made).
  const shadowOf = (el) => el.shadowRoot || state.closedRoots.get(el) || null;
  // Fields that stop being secret fields are remembered before they do: a `type` switched from
  // password, an `autocomplete` that said one-time-code.
  const secretWatch = new MutationObserver((records) => {
    for (const record of records) {
      const old = record.oldValue || '';
      const was = record.attributeName === 'type' ? old.toLowerCase() === 'password'
        : SECRET_AUTOCOMPLETE.test(old);
      if (was) state.ever.add(record.target);
    }
  });
  const watchSecrets = (root) => secretWatch.observe(root, {
    subtree: true, attributes: true, attributeFilter: ['type', 'autocomplete'], attributeOldValue: true,
  });
  watchSecrets(document);
  const nativeAttachShadow = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = nativeApply(nativeAttachShadow, this, [init]);
    if (root.mode === 'closed') state.closedRoots.set(this, root);
    watchSecrets(root);
    return root;
  };
  // An element that takes text itself; input reaching one that does not came through a shadow
  // root the probe cannot see into (a declarative closed one).
  const takesText = (el) => el.tagName === 'INPUT' || el.tagName === 'TEXTAREA'
    || el.tagName === 'SELECT' || el.isContentEditable;
  const MAX_INPUTS = 64;
  // Trusted input (whatever an action did: typing, keys, a paste, a drop), noted before the
  // page's own handlers run (a capturing listener of the window, added before the page's
  // scripts): what the field held right then, even if the page clears it, submits it or swaps
  // it out afterwards. Every field's, in this page's memory until the server takes the secret
  // fields' (`takeInputs`): a frame's probe cannot know what the top one marked.
  window.addEventListener('input', (event) => {
    if (!event.isTrusted) return;
    let el = nativeApply(nativeComposedPath, event, [])[0] || event.target;
    for (let depth = 0; el && el.nodeType === 1 && depth < 16; depth++) {
      const root = shadowOf(el);
      if (!root || !root.activeElement) break;
      el = root.activeElement;
    }
    if (!el || el.nodeType !== 1) return;
    const opaque = !takesText(el);
    const value = opaque ? '' : cut(fieldValue(el), MAX_HELD_CHARS);
    const secret = opaque || isSecret(el);
    const last = state.inputs[state.inputs.length - 1];
    if (last && last[0] === el && !opaque && nativeApply(nativeStartsWith, value, [last[1]])) {
      last[1] = value;
      last[3] = last[3] || secret;
    } else if (state.inputs.length < MAX_INPUTS) {
      state.inputs[state.inputs.length] = [el, value, opaque, secret];
    }
  }, true);
  // A field holding a secret: what every outlet but the person at the wheel sees covered.
  const holdsSecret = (el) => isSecret(el) && fieldValue(el) !== '';
  const fieldNumber = (el) => {
    if (!state.fieldNumbers.has(el)) state.fieldNumbers.set(el, ++state.fields);
    return state.fieldNumbers.get(el);
  };
  // The element at (x, y), or the focused one (x null), where it really is: into shadow roots
  // (closed ones the page made too) and same-origin frames (a password field in a shadow root
  // or an iframe must be known as one); dx, dy: its frame's offset; opaque: a frame of another
  // origin, inside which nothing can be read from here.
  const deepest = (x, y) => {
    let element = x === null ? document.activeElement : document.elementFromPoint(x, y);
    let dx = 0;
    let dy = 0;
    let opaque = false;
    for (let depth = 0; element && depth < 16; depth++) {
      const root = shadowOf(element);
      const inner = root && (x === null ? root.activeElement : root.elementFromPoint(x - dx, y - dy));
      if (inner && inner !== element) {
        element = inner;
        continue;
      }
      if (element.tagName !== 'IFRAME' && element.tagName !== 'FRAME') break;
      let doc = null;
      try {
        doc = element.contentDocument;
      } catch (error) {
        doc = null;
      }
      if (!doc) {
        opaque = true;
        break;
      }
      const f = element.getBoundingClientRect();
      const fx = dx + f.left + element.clientLeft;
      const fy = dy + f.top + element.clientTop;
      const next = x === null ? doc.activeElement : doc.elementFromPoint(x - fx, y - fy);
      if (!next || next === doc.documentElement || next === doc.body && x === null) break;
      element = next;
      dx = fx;
      dy = fy;
    }
    return { element, dx, dy, opaque };
  };
  // What a secret element holds, for the server alone (`Secrets::hold`): undefined for others.
  // A secret <select> holds every option's value and label, a line each: hidden alike, no
  // option is told from the others (hiding the chosen one alone showed it by elimination).
  const everyOption = (el) => {
    try {
      return Array.from(el.options).flatMap((option) => [option.value, option.label]).join('\n');
    } catch (error) {
      return '';
    }
  };
  const heldBy = (element) => {
    if (!(element && element.nodeType === 1 && isSecret(element))) return undefined;
    const value = element.tagName === 'SELECT'
      ? `${fieldValue(element)}\n${everyOption(element)}`
      : fieldValue(element);
    return { field: fieldNumber(element), value: cut(value, MAX_HELD_CHARS) };
  };
  // The input noted here and in same-origin frames since the last call, into secret fields
  // (those of this document's rule: `isSecret`, marks included), or through shadow roots that
  // cannot be seen into (opaque).
  const takeInputs = () => {
    const taken = state.inputs.splice(0);
    const frames = document.querySelectorAll('iframe, frame');
    for (let i = 0; i < frames.length && i < 64; i++) {
      let inner = null;
      try {
        inner = frames[i].contentWindow && frames[i].contentWindow.__browserenv;
      } catch (error) {
        inner = null; // another origin
      }
      if (inner && inner !== api && inner.takeInputs) {
        for (const entry of inner.takeInputs()) taken[taken.length] = entry;
      }
    }
    return taken;
  };
  const api = {
    // How long ago (ms) the page heard the browser's `dragstart` since the last press, if it did.
    dragStartedAgo: () => (dragStart !== null && !dragStart.defaultPrevented
      ? browserNow() - dragStart.timeStamp : null),
    // The in-page part of the settle rule (server/src/chromium/page/settle.rs says the whole rule and
    // gives the numbers). Resolves once the page is quiet (no requests, no short timers, loaded,
    // no DOM change for quietMs) and drawn: `frameCount` frames
    // have begun since the start and since its last change (DOM change, timer callback, request
    // end), so the frame that painted the change has gone to the compositor. The two waits
    // overlap: a change quietMs ago is usually drawn already. A change once the page was found
    // quiet (a scroll handler setting the title, rendering that goes on frame by frame on a slow
    // machine) needs the frames again, not quietMs more. Past maxMs it resolves `bounded` once
    // the frames have begun since; with no frames for noFramesMs it resolves `bounded` at once
    // (the last change may not be drawn); with none to come (a hidden page), as it was.
    //
    // Frames are asked for only while the last change is not yet drawn: each one costs the
    // renderer and the compositor a few milliseconds of CPU, which sessions sharing a machine
    // pay for each other. A change asks for them again.
    // With `factsChars`, the answer carries the settled page's `facts` too: one call of the
    // step instead of two.
    settle(quietMs, frameCount, noFramesMs, maxMs, factsChars) {
      const start = browserNow();
      return new Promise((resolve) => {
        const startOrder = ++state.order;
        // When (in `order`) the last `frameCount` frames began (requestAnimationFrame), oldest first, and
        // when (in time) the last one did.
        const frames = [];
        let lastFrameAt = 0;
        let finished = false;
        // When the page was found quiet, or ran out of time (then it is not quiet), in time and
        // in `order`.
        let readyAt = null;
        let readyOrder = 0;
        let quiet = false;
        // Whether a frame has been asked for, and when frames were last asked for after a pause.
        let asked = false;
        let askedAt = start;
        // What the frames count from.
        const since = () => (readyAt !== null && !quiet ? readyOrder : Math.max(startOrder, state.lastChange));
        const drawn = () => frames.length === frameCount && frames[0] > since();
        const frame = () => {
          asked = false;
          if (finished) return;
          frames.push(++state.order);
          lastFrameAt = browserNow();
          if (frames.length > frameCount) frames.shift();
          if (!over() && !drawn()) wake();
        };
        const wake = () => {
          if (asked || finished) return;
          asked = true;
          askedAt = browserNow();
          nativeRequestAnimationFrame(frame);
        };
        // Whether the settle is over (then it has resolved).
        const over = () => {
          const now = browserNow();
          if (readyAt === null || (quiet && now - start >= maxMs)) {
            const busy =
              state.requests > 0 || state.timers.size > 0 || document.readyState !== 'complete';
            if (readyAt === null && !busy && now - state.lastMutation >= quietMs) {
              quiet = true;
            } else if (now - start >= maxMs) {
              quiet = false;
            } else {
              return false;
            }
            readyAt = now;
            readyOrder = ++state.order;
          }
          // Past here with the change undrawn only when no frame came for noFramesMs.
          const undrawn = !drawn() && !document.hidden;
          if (undrawn) {
            wake();
            const lastFrame = Math.max(readyAt, askedAt, lastFrameAt);
            if (now - lastFrame < noFramesMs) return false;
          }
          finished = true;
          state.wakers.delete(wake);
          const answer = { bounded: !quiet || undrawn, expected: navigationExpected() };
          if (factsChars) answer.facts = api.facts(factsChars);
          resolve(answer);
          return true;
        };
        // Until the page is found quiet, polled every 10 ms, or sooner when the quiet is due
        // (quietMs after the last DOM change). Then the frames' callbacks judge, and a poll is
        // only needed when none may come: at the end of noFramesMs without one (or at once on a
        // hidden page). Each poll wakes the page's renderer, which eight sessions pay for
        // each other.
        const poll = () => {
          if (finished || over()) return;
          const now = browserNow();
          let next = 10;
          if (readyAt === null) {
            const due = state.lastMutation + quietMs - now;
            if (due > 0) next = Math.min(10, Math.ceil(due));
          } else if (!document.hidden) {
            next = Math.max(10, Math.ceil(Math.max(readyAt, askedAt, lastFrameAt) + noFramesMs - now));
          }
          nativeSetTimeout(poll, next);
        };
        state.wakers.add(wake);
        wake();
        poll();
      });
    },
    // Whether the page has done nothing on its own since `activity()` said `mark`: no change, no
    // callback of its timers or frames, nothing pending, no animation running.
    activity() {
      return state.activity;
    },
    pristine(mark) {
      const running = document.getAnimations().some((animation) => animation.playState === 'running');
      return state.activity === mark && state.requests === 0 && state.timers.size === 0 && !running;
    },
    facts(maxText) {
      const blocked = state.blocked.splice(0);
      const blockedMore = state.blockedMore;
      state.blockedMore = 0;
      const body = document.body;
      // Where password inputs are on screen, so recordings can mask them (--redact): in the
      // document, its open shadow roots and its same-origin iframes, at any depth; inputs masked
      // by CSS (a PIN) count as passwords, as in the text layer.
      const passwords = [];
      const findPasswords = (root, dx, dy, depth) => {
        if (depth > 8) return;
        for (const el of root.querySelectorAll('*')) {
          if (shadowOf(el)) findPasswords(shadowOf(el), dx, dy, depth + 1);
          if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
            let inner = null;
            try {
              inner = el.contentDocument;
            } catch (error) {
              inner = null;
            }
            if (inner) {
              const f = el.getBoundingClientRect();
              findPasswords(inner, dx + f.left + el.clientLeft, dy + f.top + el.clientTop, depth + 1);
            }
          }
          if (!holdsSecret(el) || passwords.length >= MAX_SECRET_BOXES) continue;
          const r = el.getBoundingClientRect();
          const left = r.left + dx;
          const top = r.top + dy;
          if (r.width > 0 && r.height > 0 && top + r.height > 0 && left + r.width > 0 && top < innerHeight && left < innerWidth) {
            passwords.push([Math.floor(left), Math.floor(top), Math.ceil(r.width), Math.ceil(r.height)]);
          }
        }
      };
      findPasswords(document, 0, 0, 0);
      // An open <select> that is secret: the dropdown the server draws for it shows its choice
      // highlighted, so the server covers that too (`dropdown.rs`).
      let secretDropdown = false;
      try {
        const open = nativeApply(nativeQuerySelector, document, ['select:open']);
        secretDropdown = Boolean(open && isSecret(open));
      } catch (error) {
        secretDropdown = false;
      }
      // For the server alone: what the focused secret field holds, and what input left in
      // secret fields during the step (`server/src/environment/observation.rs`).
      const held = heldBy(deepest(null, null).element);
      const inputs = [];
      for (const [el, value, opaque, secret] of takeInputs()) {
        // A field the page masks shows bullets, not what was typed: the input reached a secret
        // field, what it typed is the secret.
        if (opaque || ((secret || isSecret(el)) && MASKED.test(fieldValue(el)))) inputs.push({ opaque: true });
        else if (secret || isSecret(el)) inputs.push({ field: fieldNumber(el), value });
      }
      return {
        title: cut(document.title, MAX_TITLE_CHARS),
        text: body ? cut(body.innerText, maxText) : '',
        blocked,
        blockedMore,
        passwords,
        secretDropdown,
        held,
        inputs,
      };
    },
    // This document's noted input, taken (`takeInputs`): for the probe of the page above.
    takeInputs() {
      return takeInputs();
    },
    // The visible text as lines with their boxes, for the terminal UI's text layer
    // (GET /sessions/{id}/text) and the agents' read_page. Text nodes of the document, its open
    // shadow roots and its same-origin iframes, plus form fields' values; what another element
    // covers is left out. A frame of another origin, whose text cannot be read from here, is a
    // run of kind 'frame' with its box and no text: shown as unreadable, not silently missing.
    textRuns(maxRuns, budgetMs) {
      const started = browserNow();
      const runs = [];
      let truncated = false;
      const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'TEXTAREA', 'SELECT', 'OPTION']);
      // Bounds for hostile or huge pages: the text node size past which its start is searched for
      // instead of walked, characters per run, and the longest word whose line breaks are looked
      // for character by character.
      const HUGE_NODE = 20000;
      const MAX_RUN_CHARS = 1000;
      const MAX_SPLIT_WORD = 200;
      const FIELD_TYPES = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'number', 'password',
        'date', 'time', 'datetime-local', 'month', 'week', 'submit', 'button', 'reset']);
      const BUTTON_TYPES = new Set(['submit', 'button', 'reset']);
      // A frame of another origin smaller than this (a tracking pixel) is not worth a line.
      const MIN_FRAME_PX = 8;
      const rgb = (css) => {
        const parts = (css.match(/[\d.]+/g) || []).map(Number);
        return [0, 1, 2].map((i) => Math.max(0, Math.min(255, Math.round(parts[i] || 0))));
      };
      const transform = (text, how) => how === 'uppercase' ? text.toUpperCase()
        : how === 'lowercase' ? text.toLowerCase()
          : how === 'capitalize' ? text.replace(/(^|\s)(\S)/g, (m, s, c) => s + c.toUpperCase()) : text;
      const visible = (el) => !el.checkVisibility
        || el.checkVisibility({ opacityProperty: true, visibilityProperty: true });
      const onScreen = (left, top, right, bottom) => right > left && bottom > top && right > 0
        && bottom > 0 && left < innerWidth && top < innerHeight;
      // The element is what a person sees at (x, y) of its own document, not something on top.
      const uncovered = (el, x, y) => {
        // A line cut by the viewport's edge is tested on its visible part.
        const view = el.ownerDocument.defaultView;
        x = Math.min(Math.max(x, 0), view.innerWidth - 1);
        y = Math.min(Math.max(y, 0), view.innerHeight - 1);
        // Asked of the element's own tree: a shadow root answers with its own elements.
        const root = el.getRootNode();
        const hit = (root.elementFromPoint ? root : el.ownerDocument).elementFromPoint(x, y);
        // Nothing at all there: the point is outside its (i)frame's viewport, so clipped.
        return !!hit && (hit === el || el.contains(hit) || hit.contains(el));
      };
      const styleOf = (el) => {
        const s = el.ownerDocument.defaultView.getComputedStyle(el);
        return {
          size: parseFloat(s.fontSize) || 16,
          color: rgb(s.color),
          bold: (parseInt(s.fontWeight, 10) || 400) >= 600,
          link: !!el.closest('a[href]'),
          button: !!el.closest('button, [role="button"]'),
          transform: s.textTransform,
          whiteSpace: s.whiteSpace,
        };
      };
      const push = (run) => {
        if (runs.length >= maxRuns) {
          truncated = true;
          return;
        }
        runs.push(run);
      };
      const range = document.createRange();
      // One text node: its words, grouped into the lines the layout put them on.
      const textNode = (node, dx, dy) => {
        const el = node.parentElement;
        if (!el || SKIP.has(el.tagName)) return;
        const nodeRange = node.ownerDocument === document ? range : node.ownerDocument.createRange();
        nodeRange.selectNodeContents(node);
        const all = nodeRange.getBoundingClientRect();
        if (!onScreen(all.left + dx, all.top + dy, all.right + dx, all.bottom + dy) || !visible(el)) return;
        const style = styleOf(el);
        let line = null;
        const flush = () => {
          if (line && onScreen(line.left, line.top, line.right, line.bottom)
            && uncovered(el, line.probeX, line.probeY)) {
            push({
              text: transform(line.words.join(' '), style.transform),
              x: Math.round(line.left), y: Math.round(line.top),
              width: Math.round(line.right - line.left), height: Math.round(line.bottom - line.top),
              size: style.size, color: style.color, bold: style.bold, link: style.link,
                kind: style.button ? 'button' : 'text',
            });
          }
          line = null;
        };
        const data = node.data;
        const huge = data.length > HUGE_NODE;
        const measure = (from, to) => {
          nodeRange.setStart(node, from);
          nodeRange.setEnd(node, to);
          return nodeRange.getClientRects();
        };
        // A huge node (a raw text file, a log) is not walked from its start: measuring a range in
        // it costs milliseconds, so the first character on screen is searched for.
        let from = 0;
        if (huge) {
          let low = 0;
          let high = data.length;
          while (low < high) {
            let middle = (low + high) >> 1;
            while (middle < high && /\s/.test(data[middle])) middle++;
            if (middle >= high) {
              high = (low + high) >> 1;
              continue;
            }
            const rects = measure(middle, middle + 1);
            const r = rects[rects.length - 1];
            if (r && r.bottom + dy > 0) high = middle;
            else low = middle + 1;
          }
          from = low;
        }
        if (huge && style.whiteSpace === 'pre') {
          // Unwrapped lines: each is one line on screen, measured once.
          let at = data.lastIndexOf('\n', from) + 1;
          let lines = 0;
          let clear = true;
          while (at < data.length) {
            if (browserNow() - started > budgetMs) {
              truncated = true;
              break;
            }
            const next = data.indexOf('\n', at);
            const stop = next < 0 ? data.length : next;
            const rects = stop > at ? measure(at, stop) : [];
            const r = rects[0];
            if (r && r.top + dy >= innerHeight) break;
            const text = data.slice(at, Math.min(stop, at + MAX_RUN_CHARS)).trim();
            // Hit testing costs milliseconds in such a node: every eighth line stands for its
            // neighbours (a header fixed over the log still hides the lines under it).
            if (r && (lines++ & 7) === 0) {
              clear = uncovered(el, (r.left + Math.min(r.right, innerWidth)) / 2, (r.top + r.bottom) / 2);
            }
            if (r && text && clear && onScreen(r.left + dx, r.top + dy, r.right + dx, r.bottom + dy)) {
              push({
                text: transform(text, style.transform),
                x: Math.round(r.left + dx), y: Math.round(r.top + dy),
                width: Math.round(r.width), height: Math.round(r.height),
                size: style.size, color: style.color, bold: style.bold, link: style.link,
                kind: style.button ? 'button' : 'text',
              });
            }
            at = stop + 1;
          }
          return;
        }
        // Words, grouped into the lines the layout put them on.
        const pattern = /\S+/g;
        pattern.lastIndex = from;
        let match;
        let seen = 0;
        while ((match = pattern.exec(data))) {
          if ((++seen & 63) === 0 && browserNow() - started > budgetMs) {
            truncated = true;
            break;
          }
          let start = match.index;
          const end = start + match[0].length;
          const rects = measure(start, end);
          if (!rects.length) continue;
          if (rects[0].top + dy >= innerHeight) {
            // Text in one flow goes down the page; a small node (maybe in columns) is walked whole.
            if (huge) break;
            continue;
          }
          // A word the layout broke across lines ("hook-and-|loop"): its parts, where they break.
          const pieces = [];
          if (rects.length > 1 && end - start <= MAX_SPLIT_WORD) {
            for (let i = start + 1; i < end; i++) {
              const partial = measure(start, i + 1);
              if (partial.length > 1 && partial[partial.length - 1].top > partial[0].top + 1) {
                pieces.push([start, i]);
                start = i;
              }
            }
          }
          pieces.push([start, end]);
          for (const piece of pieces) {
            const pieceRects = measure(piece[0], piece[1]);
            if (!pieceRects.length || pieceRects[0].width === 0) continue;
            const r = pieceRects[0];
            if (r.left + dx >= innerWidth) continue; // right of the viewport
            const word = data.slice(piece[0], Math.min(piece[1], piece[0] + MAX_RUN_CHARS));
            const [left, top, right, bottom] = [r.left + dx, r.top + dy, r.right + dx, r.bottom + dy];
            const sameLine = line && Math.abs(top - line.top) < Math.max(2, (bottom - top) / 2)
              && left >= line.right - 1;
            if (!sameLine) {
              flush();
              line = { words: [], length: 0, left, top, right, bottom,
                probeX: (r.left + r.right) / 2, probeY: (r.top + r.bottom) / 2 };
            }
            if (line.length + word.length <= MAX_RUN_CHARS) {
              line.words.push(word);
              line.length += word.length + 1;
            }
            line.right = Math.max(line.right, right);
            line.bottom = Math.max(line.bottom, bottom);
          }
        }
        flush();
      };
      // A form field shows its value (or placeholder) inside its box.
      const field = (el, dx, dy) => {
        const type = (el.getAttribute('type') || '').toLowerCase();
        if (el.tagName === 'INPUT' && !FIELD_TYPES.has(type)) return;
        const r = el.getBoundingClientRect();
        if (!onScreen(r.left + dx, r.top + dy, r.right + dx, r.bottom + dy) || !visible(el)) return;
        if (!uncovered(el, (r.left + r.right) / 2, (r.top + r.bottom) / 2)) return;
        const view = el.ownerDocument.defaultView;
        const s = view.getComputedStyle(el);
        let text = '';
        let kind = 'field';
        if (el.tagName === 'SELECT') {
          text = el.selectedOptions && el.selectedOptions[0] ? el.selectedOptions[0].text : '';
        } else if (BUTTON_TYPES.has(type)) {
          // Its label: the value, or the browser's own word for a submit or reset without one.
          text = el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
          kind = 'button';
        } else if (isSecret(el)) {
          // A secret (shown as discs on the page, a one-time code, one a person marked, one that
          // was a password field before it was shown): never the value.
          text = '\u2022'.repeat(el.value.length);
          kind = 'password';
        } else {
          text = el.value;
        }
        let color = rgb(s.color);
        if (!text && el.placeholder) {
          text = el.placeholder;
          kind = 'placeholder';
          color = rgb(view.getComputedStyle(el, '::placeholder').color);
        }
        const size = parseFloat(s.fontSize) || 16;
        const lineHeight = parseFloat(s.lineHeight) || size * 1.2;
        const left = r.left + dx + el.clientLeft + (parseFloat(s.paddingLeft) || 0);
        const lines = el.tagName === 'TEXTAREA' ? text.split('\n') : [text.replace(/\s+/g, ' ')];
        const firstTop = el.tagName === 'TEXTAREA'
          ? r.top + dy + el.clientTop + (parseFloat(s.paddingTop) || 0) - el.scrollTop
          : r.top + dy + (r.height - lineHeight) / 2;
        lines.forEach((lineText, i) => {
          const top = firstTop + i * lineHeight;
          if (!lineText.trim() || top + lineHeight <= r.top + dy || top >= r.bottom + dy) return;
          push({
            text: lineText.trim(), x: Math.round(left), y: Math.round(top),
            width: Math.round(Math.max(1, r.right + dx - left)), height: Math.round(lineHeight),
            size, color, bold: (parseInt(s.fontWeight, 10) || 400) >= 600, link: false, kind,
          });
        });
      };
      const walk = (root, dx, dy) => {
        const doc = root.ownerDocument || root;
        const walker = doc.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
        let node = walker.nextNode();
        while (node) {
          if (runs.length >= maxRuns || browserNow() - started > budgetMs) {
            truncated = true;
            return;
          }
          if (node.nodeType === Node.TEXT_NODE) {
            if (/\S/.test(node.data)) textNode(node, dx, dy);
          } else {
            const tag = node.tagName;
            if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') field(node, dx, dy);
            if (shadowOf(node)) walk(shadowOf(node), dx, dy);
            if (tag === 'IFRAME' || tag === 'FRAME') {
              let inner = null;
              try {
                inner = node.contentDocument;
              } catch (error) {
                inner = null; // another origin: its text is not ours to read from here
              }
              const r = node.getBoundingClientRect();
              const shown = onScreen(r.left + dx, r.top + dy, r.right + dx, r.bottom + dy);
              if (inner && inner.body && shown) {
                walk(inner.body, dx + r.left + node.clientLeft, dy + r.top + node.clientTop);
              } else if (!inner && shown && r.width >= MIN_FRAME_PX && r.height >= MIN_FRAME_PX
                && visible(node) && uncovered(node, (r.left + r.right) / 2, (r.top + r.bottom) / 2)) {
                push({
                  text: '', x: Math.round(r.left + dx), y: Math.round(r.top + dy),
                  width: Math.round(r.width), height: Math.round(r.height),
                  size: 0, color: [0, 0, 0], bold: false, link: false, kind: 'frame',
                });
              }
            }
          }
          node = walker.nextNode();
        }
      };
      if (document.body) walk(document.body, 0, 0);
      runs.sort((a, b) => (a.y + a.height / 2) - (b.y + b.height / 2) || a.x - b.x);
      return { runs, truncated };
    },
    // The element an action is about: under the pointer for a click, else the focused one. With
    // `mark`, the focused element is a person's secret field from now on. A focused secret field
    // says what it holds (`held`), for the server alone (`server/src/environment/observation.rs` takes it out).
    element(x, y, mark) {
      const { element, dx, dy, opaque } = deepest(x, y);
      if (!element || element === document.documentElement) return null;
      if (mark && x === null) state.marked.add(element);
      const tag = element.tagName.toLowerCase();
      const type = (element.getAttribute('type') || '').toLowerCase();
      const implicitRoles = {
        a: element.hasAttribute('href') ? 'link' : '', button: 'button', select: 'combobox',
        textarea: 'textbox', img: 'img', h1: 'heading', h2: 'heading', h3: 'heading',
        h4: 'heading', h5: 'heading', h6: 'heading', canvas: '', label: '', li: 'listitem',
      };
      const inputRoles = { checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button',
        reset: 'button', range: 'slider', search: 'searchbox' };
      const role = element.getAttribute('role')
        || (tag === 'input' ? inputRoles[type] || 'textbox' : implicitRoles[tag] || '');
      const clean = (text) => (text || '').replace(/\s+/g, ' ').trim();
      const labelled = element.getAttribute('aria-labelledby');
      const scope = element.getRootNode();
      const byId = labelled ? labelled.split(/\s+/).map((id) => (scope.getElementById ? scope : document).getElementById(id))
        .filter(Boolean).map((e) => e.textContent).join(' ') : '';
      const labels = element.labels ? Array.from(element.labels).map((l) => l.textContent).join(' ') : '';
      const name = clean(element.getAttribute('aria-label') || byId || labels || element.getAttribute('alt')
        || element.getAttribute('title') || element.getAttribute('placeholder')
        || (tag === 'input' ? '' : element.innerText)).slice(0, 200);
      // Typing into a frame of another origin: it may be a password field (third-party logins
      // are), and nothing says it is not, so it is treated as one.
      const password = isSecret(element) || (opaque && x === null);
      const text = password ? '' : clean(element.innerText || element.value || '').slice(0, 200);
      const r = element.getBoundingClientRect();
      const held = x === null ? heldBy(element) : undefined;
      return { tag, role, name, text, type: type || null, password, held,
        bbox: [Math.round(r.left + dx), Math.round(r.top + dy), Math.round(r.width), Math.round(r.height)] };
    },
    // What a task's check reads of the final page (`read_state`), each text cut to `max`: for
    // each selector of `elements` the first element's text, of `fields` the first field's value
    // (a checkbox or radio button's when checked, as a form sends it), and the `localStorage`
    // items of `storage`; in the order asked. A selector the page refuses says why.
    state(spec, max) {
      const find = (selector, read) => {
        let element;
        try {
          element = nativeApply(nativeQuerySelector, document, [selector]);
        } catch (e) {
          return { invalid: cut(String(e && e.message), MAX_INCIDENT_CHARS) };
        }
        return element ? read(element) : null;
      };
      const textOf = (element) => (element instanceof HTMLElement
        ? nativeApply(nativeInnerText, element, []) : nativeApply(nativeTextContent, element, []));
      const text = (element) => ({ text: cut(textOf(element), max) });
      const value = (element) => {
        const type = (element.getAttribute('type') || '').toLowerCase();
        const checkable = element.tagName === 'INPUT' && (type === 'checkbox' || type === 'radio');
        const getter = [...nativeValues].find(([kind]) => element instanceof kind);
        const own = getter ? nativeApply(getter[1], element, []) : '';
        const raw = checkable ? (element.checked ? own : '')
          : getter ? own : element.isContentEditable ? textOf(element) : '';
        return { text: cut(raw, max), secret: isSecretField(element) };
      };
      let store = null;
      try {
        store = nativeLocalStorage ? nativeApply(nativeLocalStorage.get, window, []) : null;
      } catch (e) {
        // Storage refused (an opaque origin): every item is missing.
      }
      const item = (key) => {
        try {
          const found = store ? nativeApply(nativeGetItem, store, [key]) : null;
          return found === null ? null : cut(found, max);
        } catch (e) {
          return null;
        }
      };
      return {
        elements: spec.elements.map((selector) => find(selector, text)),
        fields: spec.fields.map((selector) => find(selector, value)),
        storage: spec.storage.map(item),
      };
    },
  };
  // Neither the name nor the functions behind it can be replaced by the page: what the server
  // reads through them is the probe's, not something the page returns in its place.
  Object.freeze(api);
  Object.defineProperty(window, '__browserenv', { value: api, enumerable: false });
})();
