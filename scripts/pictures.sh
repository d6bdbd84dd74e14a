#!/usr/bin/env bash
# The README's pictures of the terminal UI, taken from real terminals under Xvfb (`make pictures`):
#
#   docs/images/tui-xterm.png  xterm -ti vt340 (sixel graphics) running browserenv-tui on its
#                              embedded server and the bundled demo site, on the catalog, with
#                              the rulers, the crosshair and its x,y readout, and the status bar
#   docs/images/tui-tmux.png   the same inside tmux (half-blocks with the text layer), in an
#                              xterm attached to it, as a person sees it
#
# Each terminal runs at a fixed size; the script opens the catalog the way a person would (the
# command line's `reset URL`), moves the crosshair with the arrows, waits until the screen shows
# the page and stops changing (bounded, with an error naming the UI's log), and takes a window
# screenshot with ImageMagick's `import`. Everything it starts (Xvfb, the terminals, tmux, the UI
# and its Chromium) is stopped on exit.
#
# Needs: Xvfb xterm tmux xdotool ImageMagick (`make terminals`), Chromium (`make chromium`).
# Environment: BROWSER_CHROMIUM (the UI's Chromium), PICTURES_OUT (default docs/images),
# PICTURES_PROFILE (debug | release; default release when target/release/browserenv-tui exists),
# PICTURES_TIMEOUT (seconds to wait for each picture, default 90), PICTURES_NO_BUILD=1 (take the
# binary as it is, without `cargo build`).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
out=${PICTURES_OUT:-docs/images}
timeout=${PICTURES_TIMEOUT:-90}
# The terminals' size in cells, and their font: DejaVu Sans Mono (fonts-dejavu-core) at a size
# whose cells (8x17 px) leave the 800x600 page room to show at 1:1 (sixel) next to the rulers and
# the status bar, and the status bar room for its whole line.
columns=120
rows=40
font="DejaVu Sans Mono"
font_size=10
# A dark theme, as most terminals are set up.
fg="#d8d8d8"
bg="#1c1c1c"

fail() {
  echo "pictures: $*" >&2
  exit 1
}

for tool in Xvfb xterm tmux xdotool import convert cargo; do
  command -v "$tool" >/dev/null || { echo "pictures: $tool is missing (make terminals installs it)" >&2; exit 1; }
done

# The UI: the release build when there is one, else the debug build (cargo builds what changed).
profile=${PICTURES_PROFILE:-}
if [ -z "$profile" ]; then
  if [ -x target/release/browserenv-tui ]; then profile=release; else profile=debug; fi
fi
if [ -n "${PICTURES_NO_BUILD:-}" ]; then
  echo "pictures: PICTURES_NO_BUILD is set: using target/$profile/browserenv-tui as it is"
elif [ "$profile" = release ]; then
  cargo build --release -p browserenv-tui
else
  cargo build -p browserenv-tui
fi
tui=$root/target/$profile/browserenv-tui
[ -x "$tui" ] || fail "no $tui"

work=$(mktemp -d "${TMPDIR:-/tmp}/browserenv-pictures.XXXXXX")
started=$(date +%s)

# ---- processes we start, and their clean-up --------------------------------------------------

pids=()
tmux_socket="browserenv-pictures-$$"
tmux_used=""

# A process and everything below it (the UI under its terminal, Chromium under the UI).
descendants() {
  local pid=$1 child
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
    descendants "$child"
  done
  echo "$pid"
}

stop_tree() {
  local all pid
  all=$(descendants "$1")
  # shellcheck disable=SC2086
  kill $all 2>/dev/null || true
  for _ in $(seq 50); do
    local alive=""
    for pid in $all; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
    [ -z "$alive" ] && return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $alive 2>/dev/null || true
}

cleanup() {
  local status=$?
  local i pid
  if [ -n "$tmux_used" ]; then
    # The UI in tmux runs under tmux's server, not under the terminal.
    for pid in $(tmux -L "$tmux_socket" list-panes -a -F '#{pane_pid}' 2>/dev/null); do stop_tree "$pid"; done
    tmux -L "$tmux_socket" kill-server 2>/dev/null || true
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_tree "${pids[$i]}"; done
  if [ "$status" -ne 0 ]; then
    echo "pictures: failed; logs and screenshots are in $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the X server --------------------------------------------------------------------------

# A display number of its own (-displayfd: Xvfb picks a free one and writes it).
Xvfb -screen 0 1600x1200x24 -nolisten tcp -noreset -displayfd 3 3>"$work/display" \
  >"$work/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  [ -s "$work/display" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "Xvfb exited: $(cat "$work/xvfb.log")"
  sleep 0.1
done
[ -s "$work/display" ] || fail "Xvfb reported no display within 10 s"
export DISPLAY=":$(head -n 1 "$work/display" | tr -d '[:space:]')"
unset TMUX TMUX_PANE

# ---- helpers -------------------------------------------------------------------------------

# The X window titled $1, once it exists.
find_window() {
  local id
  for _ in $(seq 300); do
    id=$(xdotool search --name "^$1\$" 2>/dev/null | head -n 1 || true)
    [ -n "$id" ] && { echo "$id"; return 0; }
    sleep 0.1
  done
  return 1
}

# Number of lines in the UI's log $1 containing $2.
log_count() {
  local n
  n=$(grep -c -- "$2" "$1" 2>/dev/null || true)
  echo "${n:-0}"
}

# Wait until the log $1 has more than $2 lines containing $3.
wait_log() {
  local log=$1 before=$2 what=$3 deadline=$((SECONDS + timeout))
  while [ "$(log_count "$log" "$what")" -le "$before" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the UI logged no new '$what' line within ${timeout} s; its log: $log"
    sleep 0.2
  done
}

# A screenshot's pixels' checksum (PNG files carry timestamps: equal screens, different files).
screen_sum() {
  convert "$1" -depth 8 rgb:- 2>/dev/null | md5sum | cut -d' ' -f1
}

# The checksum of the picture's inside in screenshot $1, where the UI's log $2 says it is (the
# `graphics:` line's cell size, the `picture:` line's cells; a cell's margin off each side, so the
# rulers' crosshair marks and the terminal's border stay out).
picture_sum() {
  local cell cells w h x y cols rows_
  cell=$(grep -- 'graphics: ' "$2" | tail -n 1 | sed 's/.*cell \([0-9]*\)x\([0-9]*\) px.*/\1 \2/')
  cells=$(grep -- 'picture: ' "$2" | tail -n 1 | sed 's/.*at cell \([0-9]*\),\([0-9]*\) size \([0-9]*\)x\([0-9]*\) cells.*/\1 \2 \3 \4/')
  read -r w h <<<"$cell"
  read -r x y cols rows_ <<<"$cells"
  convert "$1" -crop "$(((cols - 2) * w))x$(((rows_ - 2) * h))+$(((x + 1) * w))+$(((y + 1) * h))" \
    -depth 8 rgb:- 2>/dev/null | md5sum | cut -d' ' -f1
}

# Wait until window $1 shows the same pixels three times in a row, 0.4 s apart, and the check
# command "$2" (run with the screenshot's path) accepts it; the screenshot is left in $3.
wait_screen() {
  local window=$1 check=$2 shot=$3 deadline=$((SECONDS + timeout)) last="" same=0 now
  while :; do
    import -window "$window" "png:$shot" 2>/dev/null || true
    now=$(screen_sum "$shot")
    if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
    if [ "$same" -ge 2 ] && $check "$shot"; then return 0; fi
    [ "$SECONDS" -lt "$deadline" ] || fail "the screen did not settle on the page within ${timeout} s; last screenshot: $shot"
    sleep 0.4
  done
}

# The demo site's URL, from the UI's log ("demo site at http://127.0.0.1:PORT/").
site_url() {
  local deadline=$((SECONDS + timeout)) url
  while :; do
    url=$(sed -n 's/.*demo site at \(http[^ ]*\).*/\1/p' "$1" | tail -n 1)
    [ -n "$url" ] && { echo "${url%/}/"; return 0; }
    [ "$SECONDS" -lt "$deadline" ] || fail "the UI logged no demo site URL within ${timeout} s; its log: $1"
    sleep 0.2
  done
}

# The last `picture:` line: "sixel at cell 7,1 size 113x38 cells, 800x600 px, region 0,0 800x600".
picture_geometry() {
  grep -- 'picture: ' "$1" | tail -n 1 | sed 's/.*picture: //'
}

# A screenshot for the README: no metadata, a palette when the picture has few enough colours to
# keep exactly, else 8-bit RGB at the best zlib compression.
save_png() {
  local shot=$1 dest=$2 colours
  colours=$(convert "$shot" -format %k info:)
  mkdir -p "$(dirname "$dest")"
  if [ "$colours" -le 256 ]; then
    convert "$shot" -strip -define png:compression-level=9 "PNG8:$dest"
  else
    convert "$shot" -strip -depth 8 -define png:compression-level=9 -define png:compression-filter=5 \
      -define png:compression-strategy=1 "PNG24:$dest"
  fi
  echo "$dest: $(identify -format '%wx%h' "$dest"), $colours colours, $(($(stat -c %s "$dest") / 1024)) KiB"
}

# xterm at the fixed size and font, titled $1, running the rest of the arguments.
open_xterm() {
  local title=$1
  shift
  xterm -geometry "${columns}x${rows}+0+0" -fa "$font" -fs "$font_size" -fg "$fg" -bg "$bg" \
    -bc -xrm 'XTerm*cursorBlink: false' -T "$title" "$@" >"$work/$title.stderr" 2>&1 &
  pids+=($!)
}

# ---- xterm, sixel --------------------------------------------------------------------------

xterm_log=$work/xterm-tui.log
open_xterm browserenv-pictures-xterm -ti vt340 -e "$tui" --log "$xterm_log"
window=$(find_window browserenv-pictures-xterm) || fail "no xterm window; $(cat "$work/browserenv-pictures-xterm.stderr")"
echo "xterm: waiting for the UI's first picture"
wait_log "$xterm_log" 0 'picture: '
grep -q 'graphics: sixel' "$xterm_log" || fail "xterm -ti vt340 did not get sixel graphics: $(grep 'graphics: ' "$xterm_log")"
# The page is on screen when the window has many colours (the page), not a few (the placeholder
# while it loads).
many_colours() {
  [ "$(convert "$1" -format %k info:)" -gt 200 ]
}
wait_screen "$window" many_colours "$work/xterm-home.png"
home=$(picture_sum "$work/xterm-home.png" "$xterm_log")
site=$(site_url "$xterm_log")
# The catalog, through the UI's command line, and the crosshair onto the first product's price,
# 630,280 (arrows: 10 px, with Shift 50 px, from the middle of the page, 400,300).
xdotool windowfocus --sync "$window"
xdotool type --delay 20 ":reset ${site}catalog.html"
xdotool key Return
xdotool key --delay 60 shift+Right shift+Right shift+Right shift+Right Right Right Right Up Up
# The catalog is on screen when the window has many colours and the picture is no longer the
# home page.
catalog_shown() {
  many_colours "$1" && [ "$(picture_sum "$1" "$xterm_log")" != "$home" ]
}
wait_screen "$window" catalog_shown "$work/xterm.png"
echo "xterm: $(picture_geometry "$xterm_log")"
save_png "$work/xterm.png" "$out/tui-xterm.png"

# ---- tmux, half-blocks and the text layer --------------------------------------------------

tmux_log=$work/tmux-tui.log
tmux_used=1
cat >"$work/tmux.conf" <<'EOF'
set -g default-terminal tmux-256color
# xterm shows 24-bit colour: the half-blocks in the page's own colours.
set -as terminal-features ',xterm*:RGB'
set -g status-right ''
EOF
open_xterm browserenv-pictures-tmux -e tmux -L "$tmux_socket" -f "$work/tmux.conf" \
  new-session -s pictures "$tui --log $tmux_log"
window=$(find_window browserenv-pictures-tmux) || fail "no xterm window for tmux; $(cat "$work/browserenv-pictures-tmux.stderr")"
echo "tmux: waiting for the UI's first picture"
wait_log "$tmux_log" 0 'picture: '
grep -q 'graphics: halfblocks' "$tmux_log" || fail "tmux did not get half-blocks: $(grep 'graphics: ' "$tmux_log")"
site=$(site_url "$tmux_log")
# The home page's text first: then the UI reads keys and has its first episode.
home_text() {
  tmux -L "$tmux_socket" capture-pane -p -t pictures | grep -q 'Welcome to Harbor Hardware'
}
wait_screen "$window" home_text "$work/tmux-home.png"
tmux -L "$tmux_socket" send-keys -t pictures ":reset ${site}catalog.html" Enter
tmux -L "$tmux_socket" send-keys -t pictures S-Right S-Right S-Right S-Right Right Right Right Up Up

# The text layer is on screen when tmux's pane has the catalog's prices as characters.
catalog_text() {
  local pane
  pane=$(tmux -L "$tmux_socket" capture-pane -p -t pictures)
  grep -q '\$129\.00' <<<"$pane" && grep -q 'Cordless Drill' <<<"$pane"
}
wait_screen "$window" catalog_text "$work/tmux.png"
echo "tmux: $(picture_geometry "$tmux_log")"
save_png "$work/tmux.png" "$out/tui-tmux.png"

echo "pictures: done in $(($(date +%s) - started)) s"
