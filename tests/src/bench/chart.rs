//! A small SVG writer for the bench's charts: panels side by side under a title, each either
//! lines (series of points on two linear axes from zero) or bars (horizontal, with a whisker),
//! with ticks, grid lines, axis labels and a legend. The SVG is plain text; nothing to install.

use std::fmt::Write;

/// A title, a line under it, and panels from left to right.
pub struct Chart {
    pub title: String,
    pub subtitle: String,
    pub panels: Vec<Panel>,
}

pub enum Panel {
    Lines(LinePanel),
    Bars(BarPanel),
}

/// Lines on two linear axes that start at zero; the x ticks are the points' x values.
pub struct LinePanel {
    pub title: String,
    /// A line of small print under the title.
    pub note: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
}

pub struct Line {
    /// The line's name in the legend.
    pub label: String,
    /// An SVG color.
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// Horizontal bars from zero, one under the other, each with its label above it.
pub struct BarPanel {
    pub title: String,
    pub note: String,
    pub x_label: String,
    pub bars: Vec<Bar>,
}

pub struct Bar {
    pub label: String,
    pub value: f64,
    /// A second value drawn as a whisker from the bar's end (a p95 beside a median).
    pub whisker: Option<f64>,
    pub color: &'static str,
}

/// Where things go, in SVG pixels.
const PANEL_WIDTH: f64 = 400.0;
const HEIGHT: f64 = 470.0;
const TITLE_Y: f64 = 28.0;
const SUBTITLE_Y: f64 = 48.0;
const PANEL_TITLE_Y: f64 = 88.0;
const PANEL_NOTE_Y: f64 = 104.0;
const PLOT_TOP: f64 = 124.0;
const PLOT_BOTTOM: f64 = 340.0;
const PLOT_LEFT: f64 = 62.0;
const PLOT_RIGHT: f64 = 22.0;
const LEGEND_TOP: f64 = 392.0;
const LEGEND_ROW: f64 = 17.0;

const INK: &str = "#222";
const FAINT: &str = "#666";

/// How a text is set; `anchor` is which of its points is at x (`start`, `middle` or `end`).
#[derive(Clone, Copy)]
struct Font {
    size: f64,
    color: &'static str,
    bold: bool,
    anchor: &'static str,
}

const fn font(size: f64, color: &'static str, bold: bool, anchor: &'static str) -> Font {
    Font {
        size,
        color,
        bold,
        anchor,
    }
}

const TITLE: Font = font(18.0, INK, true, "middle");
const SUBTITLE: Font = font(12.0, FAINT, false, "middle");
const PANEL_TITLE: Font = font(14.0, INK, true, "middle");
const NOTE: Font = font(11.0, FAINT, false, "middle");
const AXIS_LABEL: Font = font(12.0, INK, false, "middle");
const X_TICK: Font = font(11.0, INK, false, "middle");
const Y_TICK: Font = font(11.0, INK, false, "end");
const LEGEND: Font = font(11.0, INK, false, "start");

/// How a line is drawn.
#[derive(Clone, Copy)]
struct Stroke {
    color: &'static str,
    width: f64,
    dashed: bool,
}

const AXIS: Stroke = Stroke {
    color: INK,
    width: 1.0,
    dashed: false,
};
const GRID: Stroke = Stroke {
    color: "#e4e4e4",
    width: 1.0,
    dashed: false,
};
const WHISKER: Stroke = Stroke {
    color: INK,
    width: 1.5,
    dashed: false,
};

impl Line {
    fn stroke(&self) -> Stroke {
        Stroke {
            color: self.color,
            width: 2.0,
            dashed: self.dashed,
        }
    }
}

/// The chart as an SVG document.
pub fn render(chart: &Chart) -> String {
    let width = PANEL_WIDTH * chart.panels.len().max(1) as f64;
    let mut svg = Svg::default();
    let _ = writeln!(
        svg.0,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" font-family="Helvetica, Arial, sans-serif">"#
    );
    svg.rect(0.0, 0.0, width, HEIGHT, "white");
    svg.text(width / 2.0, TITLE_Y, TITLE, &chart.title);
    svg.text(width / 2.0, SUBTITLE_Y, SUBTITLE, &chart.subtitle);
    for (index, panel) in chart.panels.iter().enumerate() {
        let left = PANEL_WIDTH * index as f64;
        match panel {
            Panel::Lines(panel) => line_panel(&mut svg, left, panel),
            Panel::Bars(panel) => bar_panel(&mut svg, left, panel),
        }
    }
    svg.0.push_str("</svg>\n");
    svg.0
}

/// The plot area of the panel whose left edge is `left`: (left, right) in pixels.
fn plot_x(left: f64) -> (f64, f64) {
    (left + PLOT_LEFT, left + PANEL_WIDTH - PLOT_RIGHT)
}

fn panel_titles(svg: &mut Svg, left: f64, title: &str, note: &str) {
    let center = left + PANEL_WIDTH / 2.0;
    svg.text(center, PANEL_TITLE_Y, PANEL_TITLE, title);
    svg.text(center, PANEL_NOTE_Y, NOTE, note);
}

fn line_panel(svg: &mut Svg, left: f64, panel: &LinePanel) {
    panel_titles(svg, left, &panel.title, &panel.note);
    let points = || panel.lines.iter().flat_map(|line| line.points.iter());
    let mut x_ticks: Vec<f64> = points().map(|p| p.0).filter(|x| x.is_finite()).collect();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();
    let y_ticks = nice_ticks(points().map(|p| p.1).fold(0.0, max_finite));
    let (x0, x1) = plot_x(left);
    let x = Scale::new(0.0, x_ticks.last().copied().unwrap_or(1.0), x0, x1);
    let y = Scale::new(0.0, *y_ticks.last().unwrap_or(&1.0), PLOT_BOTTOM, PLOT_TOP);
    y_axis(svg, left, &y, &y_ticks, &panel.y_label);
    x_axis(svg, left, &x, &x_ticks, &panel.x_label);
    for line in &panel.lines {
        let drawn: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter(|(px, py)| px.is_finite() && py.is_finite())
            .map(|&(px, py)| (x.at(px), y.at(py)))
            .collect();
        svg.polyline(&drawn, line.stroke());
        for &(px, py) in &drawn {
            svg.circle(px, py, line.color);
        }
    }
    // The legend under the axis: a piece of each line, and its label.
    for (row, line) in panel.lines.iter().enumerate() {
        let baseline = LEGEND_TOP + LEGEND_ROW * row as f64;
        let (sample, middle) = (left + 16.0, baseline - 4.0);
        svg.line((sample, middle), (sample + 26.0, middle), line.stroke());
        svg.circle(sample + 13.0, middle, line.color);
        svg.text(sample + 34.0, baseline, LEGEND, &line.label);
    }
}

fn bar_panel(svg: &mut Svg, left: f64, panel: &BarPanel) {
    panel_titles(svg, left, &panel.title, &panel.note);
    let most = panel
        .bars
        .iter()
        .flat_map(|bar| [bar.value, bar.whisker.unwrap_or(0.0)])
        .fold(0.0, max_finite);
    let ticks = nice_ticks(most);
    let (x0, x1) = plot_x(left);
    let x = Scale::new(0.0, *ticks.last().unwrap_or(&1.0), x0, x1);
    for &tick in &ticks {
        svg.line((x.at(tick), PLOT_TOP), (x.at(tick), PLOT_BOTTOM), GRID);
    }
    x_axis(svg, left, &x, &ticks, &panel.x_label);
    svg.line((x0, PLOT_TOP), (x0, PLOT_BOTTOM), AXIS);
    // A row per bar: its label, and under it the bar.
    let row = (PLOT_BOTTOM - PLOT_TOP) / panel.bars.len().max(1) as f64;
    for (index, bar) in panel.bars.iter().enumerate() {
        let top = PLOT_TOP + row * index as f64;
        svg.text(x0 + 4.0, top + 16.0, LEGEND, &bar.label);
        let (bar_top, bar_height) = (top + 22.0, (row - 30.0).clamp(6.0, 18.0));
        if !bar.value.is_finite() {
            continue;
        }
        svg.rect(x0, bar_top, x.at(bar.value) - x0, bar_height, bar.color);
        if let Some(whisker) = bar.whisker.filter(|w| w.is_finite()) {
            let (middle, end) = (bar_top + bar_height / 2.0, x.at(whisker));
            svg.line((x.at(bar.value), middle), (end, middle), WHISKER);
            svg.line((end, middle - 5.0), (end, middle + 5.0), WHISKER);
        }
    }
}

/// The axis along the bottom, its ticks and their labels, and its label under them.
fn x_axis(svg: &mut Svg, left: f64, x: &Scale, ticks: &[f64], label: &str) {
    let (x0, x1) = plot_x(left);
    for &tick in ticks {
        let at = x.at(tick);
        svg.line((at, PLOT_BOTTOM), (at, PLOT_BOTTOM + 5.0), AXIS);
        svg.text(at, PLOT_BOTTOM + 18.0, X_TICK, &number(tick));
    }
    svg.line((x0, PLOT_BOTTOM), (x1, PLOT_BOTTOM), AXIS);
    svg.text((x0 + x1) / 2.0, PLOT_BOTTOM + 36.0, AXIS_LABEL, label);
}

/// Grid lines at the ticks, their labels, the axis and its label (turned, to the left).
fn y_axis(svg: &mut Svg, left: f64, y: &Scale, ticks: &[f64], label: &str) {
    let (x0, x1) = plot_x(left);
    for &tick in ticks {
        let at = y.at(tick);
        svg.line((x0, at), (x1, at), GRID);
        svg.line((x0 - 5.0, at), (x0, at), AXIS);
        svg.text(x0 - 8.0, at + 4.0, Y_TICK, &number(tick));
    }
    svg.line((x0, PLOT_TOP), (x0, PLOT_BOTTOM), AXIS);
    let (lx, ly) = (left + 16.0, (PLOT_TOP + PLOT_BOTTOM) / 2.0);
    let _ = writeln!(
        svg.0,
        r#"<text x="{lx:.1}" y="{ly:.1}" font-size="{}" text-anchor="middle" fill="{INK}" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
        AXIS_LABEL.size,
        escape(label)
    );
}

fn max_finite(most: f64, value: f64) -> f64 {
    if value.is_finite() {
        most.max(value)
    } else {
        most
    }
}

/// Ticks from 0 to at least `max`, 1, 2 or 5 times a power of ten apart, about five of them.
pub fn nice_ticks(max: f64) -> Vec<f64> {
    if !max.is_finite() || max <= 0.0 {
        return vec![0.0, 1.0];
    }
    let rough = max / 5.0;
    let power = rough.log10().floor();
    let multiple = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * 10f64.powf(power) >= rough * (1.0 - 1e-9))
        .unwrap_or(10.0);
    let count = (max / (multiple * 10f64.powf(power)) - 1e-9)
        .ceil()
        .max(1.0) as i64;
    // Multiples of the step, computed so that 0.1 steps print as 0.3, not 0.30000000000000004.
    (0..=count)
        .map(|i| {
            let units = i as f64 * multiple;
            if power < 0.0 {
                units / 10f64.powf(-power)
            } else {
                units * 10f64.powf(power)
            }
        })
        .collect()
}

/// A tick's label: no decimals when it is whole.
fn number(value: f64) -> String {
    format!("{value}")
}

/// A linear map from a domain (data) to a range (pixels).
struct Scale {
    domain: (f64, f64),
    range: (f64, f64),
}

impl Scale {
    fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        Scale {
            domain: (d0, d1),
            range: (r0, r1),
        }
    }

    fn at(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        if d1 == d0 {
            return r0;
        }
        r0 + (value - d0) / (d1 - d0) * (r1 - r0)
    }
}

/// Text within an SVG element or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The document being written, an element a line.
#[derive(Default)]
struct Svg(String);

impl Svg {
    fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: &str) {
        let _ = writeln!(
            self.0,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{height:.1}" fill="{fill}"/>"#
        );
    }

    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: Stroke) {
        let _ = writeln!(
            self.0,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"{}/>"#,
            stroke.attributes()
        );
    }

    fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        let points: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            self.0,
            r#"<polyline points="{}" fill="none"{}/>"#,
            points.join(" "),
            stroke.attributes()
        );
    }

    /// A data point's dot.
    fn circle(&mut self, x: f64, y: f64, fill: &str) {
        let _ = writeln!(
            self.0,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{fill}"/>"#
        );
    }

    fn text(&mut self, x: f64, y: f64, font: Font, content: &str) {
        let weight = if font.bold {
            r#" font-weight="bold""#
        } else {
            ""
        };
        let _ = writeln!(
            self.0,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{}" text-anchor="{}" fill="{}"{weight}>{}</text>"#,
            font.size,
            font.anchor,
            font.color,
            escape(content)
        );
    }
}

impl Stroke {
    fn attributes(self) -> String {
        let dash = if self.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        format!(
            r#" stroke="{}" stroke-width="{}"{dash}"#,
            self.color, self.width
        )
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Every element closed in order and nothing else between the tags but text: the check of
    /// well-formed XML this writer needs (it writes no comments, CDATA or processing
    /// instructions).
    pub fn assert_well_formed(svg: &str) {
        let mut open: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            assert!(
                !rest[..start].contains('>'),
                "a stray '>' in {:?}",
                &rest[..start]
            );
            let end = rest[start..].find('>').expect("a tag is not closed") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "a '<' inside the tag {tag:?}");
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "an unclosed quote in {tag:?}"
            );
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            assert!(!name.is_empty(), "a tag without a name: {tag:?}");
            if tag.starts_with('/') {
                assert_eq!(open.pop().as_deref(), Some(name.as_str()), "closes {tag:?}");
            } else if !tag.ends_with('/') {
                open.push(name);
            }
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "left open: {open:?}");
        for entity in svg.split('&').skip(1) {
            let name = entity.split(';').next().unwrap_or_default();
            assert!(
                ["amp", "lt", "gt", "quot"].contains(&name),
                "an unknown entity &{name}"
            );
        }
        assert!(svg.starts_with("<svg "), "not an SVG document");
        for bad in ["NaN", "inf"] {
            assert!(!svg.contains(&format!("=\"{bad}")), "{bad} in an attribute");
            assert!(
                !svg.contains(&format!("=\"-{bad}")),
                "-{bad} in an attribute"
            );
            assert!(!svg.contains(&format!(",{bad}")), "{bad} in the points");
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(
            nice_ticks(948.0),
            vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
        );
        assert_eq!(nice_ticks(113.0), vec![0.0, 50.0, 100.0, 150.0]);
        assert_eq!(nice_ticks(100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_ticks(8.0), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(nice_ticks(0.3), vec![0.0, 0.1, 0.2, 0.3]);
        assert_eq!(number(nice_ticks(0.3)[3]), "0.3");
        assert_eq!(number(200.0), "200");
        for max in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert_eq!(nice_ticks(max), vec![0.0, 1.0]);
        }
        for max in [0.7, 3.0, 17.0, 49.0, 51.0, 1661.0, 123456.0] {
            let ticks = nice_ticks(max);
            assert!(*ticks.last().unwrap() >= max, "{max}: {ticks:?}");
            assert!((3..=6).contains(&ticks.len()), "{max}: {ticks:?}");
        }
    }

    #[test]
    fn scales_map_the_domain_onto_the_range() {
        // The y axis: 0 at the bottom, the top tick at the top.
        let y = Scale::new(0.0, 200.0, PLOT_BOTTOM, PLOT_TOP);
        assert_eq!(y.at(0.0), PLOT_BOTTOM);
        assert_eq!(y.at(200.0), PLOT_TOP);
        assert_eq!(y.at(100.0), (PLOT_BOTTOM + PLOT_TOP) / 2.0);
        assert_eq!(Scale::new(5.0, 5.0, 10.0, 20.0).at(7.0), 10.0);
    }

    fn sample() -> Chart {
        Chart {
            title: "Steps & <resets>".into(),
            subtitle: "2 cores \"quoted\"".into(),
            panels: vec![
                Panel::Lines(LinePanel {
                    title: "lines".into(),
                    note: "a note".into(),
                    x_label: "sessions".into(),
                    y_label: "ms".into(),
                    lines: vec![
                        Line {
                            label: "a".into(),
                            color: "#1f77b4",
                            dashed: false,
                            points: vec![(1.0, 50.0), (8.0, 113.0)],
                        },
                        Line {
                            label: "b, with a missing point".into(),
                            color: "#ff7f0e",
                            dashed: true,
                            points: vec![(1.0, f64::NAN), (8.0, 104.0)],
                        },
                    ],
                }),
                Panel::Bars(BarPanel {
                    title: "bars".into(),
                    note: String::new(),
                    x_label: "ms".into(),
                    bars: vec![Bar {
                        label: "one".into(),
                        value: 122.0,
                        whisker: Some(157.0),
                        color: "#1f77b4",
                    }],
                }),
            ],
        }
    }

    #[test]
    fn renders_well_formed_svg_with_escaped_text() {
        let svg = render(&sample());
        assert_well_formed(&svg);
        assert!(svg.contains(r#"width="800""#), "two panels wide");
        assert!(svg.contains("Steps &amp; &lt;resets&gt;"));
        assert!(svg.contains("2 cores &quot;quoted&quot;"));
        // The x ticks are the points' x values; the y ticks round numbers past the largest.
        for tick in [">1</text>", ">8</text>", ">150</text>", ">200</text>"] {
            assert!(svg.contains(tick), "no tick {tick}");
        }
        // The line with a missing point is drawn through the points it has.
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            2,
            "line and legend"
        );
    }

    #[test]
    fn points_land_where_their_values_say() {
        let svg = render(&sample());
        let (x0, x1) = plot_x(0.0);
        // (8, 113) on axes to 8 and 150.
        let y = PLOT_BOTTOM - 113.0 / 150.0 * (PLOT_BOTTOM - PLOT_TOP);
        let point = format!(r#"cx="{x1:.1}" cy="{y:.1}""#);
        assert!(svg.contains(&point), "no {point}");
        // (1, 50): one eighth of the way along x.
        let x = x0 + 1.0 / 8.0 * (x1 - x0);
        let y = PLOT_BOTTOM - 50.0 / 150.0 * (PLOT_BOTTOM - PLOT_TOP);
        let point = format!(r#"cx="{x:.1}" cy="{y:.1}""#);
        assert!(svg.contains(&point), "no {point}");
    }
}
