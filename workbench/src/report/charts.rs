//! SVG charts (plotters): lines over categories or a log axis, and grouped
//! bars. Every function returns the SVG with what it drew ([`Drawn`]: the
//! legend, the y ticks, a table of every series) or the drawing error;
//! nothing here unwraps.
//!
//! A chart draws the series marked [`Series::drawn`] (at most
//! [`MAX_LINES`]), each in the colour and with the marker of its style: ten
//! colours far apart (Tableau's ten) and ten marker shapes, style `i`
//! taking colour `i` and marker `i`, so no two lines of a chart share
//! either. Every series, drawn or not, is in [`Drawn::table`]. Log axes are
//! labelled with 1-2-5 steps, or every integer multiple of a power of ten
//! when the range is narrower than that, across the whole plotted range.

use plotters::element::EmptyElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A number with three significant figures, thousands as `k`/`M` above 1e5.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (1000, 440);

/// The most lines (or sets of bars) one chart draws.
pub const MAX_LINES: usize = 10;

/// Ten colours far apart (Tableau's ten): style `i` draws in colour `i`.
const PALETTE: [RGBColor; MAX_LINES] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A marker shape: style `i` draws with marker `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// ●
    Circle,
    /// ■
    Square,
    /// ▲
    TriangleUp,
    /// ◆
    Diamond,
    /// ▼
    TriangleDown,
    /// ×
    Cross,
    /// +
    Plus,
    /// ○
    Ring,
    /// □
    Box,
    /// ◇
    HollowDiamond,
}

/// The markers by style.
pub const MARKERS: [Marker; MAX_LINES] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
    Marker::Plus,
    Marker::Ring,
    Marker::Box,
    Marker::HollowDiamond,
];

impl Marker {
    /// The marker as one character, for the page's tables.
    pub fn glyph(self) -> char {
        match self {
            Marker::Circle => '●',
            Marker::Square => '■',
            Marker::TriangleUp => '▲',
            Marker::Diamond => '◆',
            Marker::TriangleDown => '▼',
            Marker::Cross => '×',
            Marker::Plus => '+',
            Marker::Ring => '○',
            Marker::Box => '□',
            Marker::HollowDiamond => '◇',
        }
    }
}

/// Draws marker `$m` at `$at` in colour `$c` with `$draw` (a closure
/// taking the element: each shape is its own type, so one arm each).
macro_rules! draw_marker {
    ($m:expr, $at:expr, $c:expr, $draw:expr) => {{
        let (fill, line) = ($c.filled(), $c.stroke_width(2));
        let at = $at;
        match $m {
            Marker::Circle => $draw(EmptyElement::at(at) + Circle::new((0, 0), 4, fill)),
            Marker::Ring => $draw(EmptyElement::at(at) + Circle::new((0, 0), 4, line)),
            Marker::Square => $draw(
                EmptyElement::at(at) + Polygon::new(vec![(-4, -4), (4, -4), (4, 4), (-4, 4)], fill),
            ),
            Marker::Box => $draw(
                EmptyElement::at(at)
                    + PathElement::new(vec![(-4, -4), (4, -4), (4, 4), (-4, 4), (-4, -4)], line),
            ),
            Marker::TriangleUp => {
                $draw(EmptyElement::at(at) + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], fill))
            }
            Marker::TriangleDown => {
                $draw(EmptyElement::at(at) + Polygon::new(vec![(0, 5), (5, -4), (-5, -4)], fill))
            }
            Marker::Diamond => $draw(
                EmptyElement::at(at) + Polygon::new(vec![(0, -6), (5, 0), (0, 6), (-5, 0)], fill),
            ),
            Marker::HollowDiamond => $draw(
                EmptyElement::at(at)
                    + PathElement::new(vec![(0, -6), (5, 0), (0, 6), (-5, 0), (0, -6)], line),
            ),
            Marker::Cross => $draw(
                EmptyElement::at(at)
                    + PathElement::new(vec![(-4, -4), (4, 4)], line)
                    + PathElement::new(vec![(-4, 4), (4, -4)], line),
            ),
            Marker::Plus => $draw(
                EmptyElement::at(at)
                    + PathElement::new(vec![(0, -5), (0, 5)], line)
                    + PathElement::new(vec![(-5, 0), (5, 0)], line),
            ),
        }
    }};
}

/// The colour of style `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colour of style `i` as CSS (`#1f77b4`).
pub fn color_hex(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The marker of style `i`.
pub fn marker(i: usize) -> Marker {
    MARKERS[i % MARKERS.len()]
}

/// One line or one set of bars: a subject.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Its style: colour and marker (see [`color`], [`marker`]).
    pub color: usize,
    /// Peers are drawn dashed (lines) or paler (bars).
    pub peer: bool,
    /// Drawn on the chart; else only in its table.
    pub drawn: bool,
    /// Why it is drawn, or what it is (`strongest`, `heap's original`).
    pub role: String,
    /// One value per x (category index or numeric x); `None` where missing.
    pub points: Vec<(f64, Option<f64>)>,
}

/// The x axis of a line chart.
#[derive(Clone, Debug)]
pub enum XAxis {
    /// Named categories at 0, 1, 2, …
    Categories(Vec<String>),
    /// A numeric log axis (pending counts).
    Log,
}

/// Why plotters could not draw a chart: its drawing error as text, since
/// plotters' error type is generic over the backend.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChartError(pub(crate) String);

fn err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError(e.to_string())
}

/// One drawn series, as its legend shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    /// The series' name.
    pub name: String,
    /// Its colour, CSS.
    pub color: String,
    /// Its marker.
    pub marker: Marker,
    /// A peer (dashed or paler).
    pub peer: bool,
}

/// One row of a chart's table: a series and its value at every x.
#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    /// The series' name.
    pub name: String,
    /// Why it is drawn, or what it is.
    pub role: String,
    /// Its colour and marker, if drawn.
    pub drawn: Option<(String, Marker)>,
    /// One cell per column.
    pub cells: Vec<String>,
}

/// Every series of a chart, drawn or not, at every x.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// The x values or categories.
    pub columns: Vec<String>,
    /// Drawn series first, in legend order, then the rest.
    pub rows: Vec<TableRow>,
}

/// A drawn chart: the SVG and what it shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// The SVG document.
    pub svg: String,
    /// The drawn series, in legend order.
    pub legend: Vec<LegendEntry>,
    /// The y axis's plotted range (log).
    pub y_range: (f64, f64),
    /// The y values labelled on the axis.
    pub y_ticks: Vec<f64>,
    /// Every series, drawn or not.
    pub table: Table,
}

impl std::ops::Deref for Drawn {
    type Target = str;

    fn deref(&self) -> &str {
        &self.svg
    }
}

fn drawn(series: &[Series]) -> impl Iterator<Item = &Series> {
    series.iter().filter(|s| s.drawn).take(MAX_LINES)
}

/// The (min, max) of the drawn positive values, padded for a log axis.
fn log_range(series: &[Series]) -> (f64, f64) {
    let vals = drawn(series)
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .filter(|v| *v > 0.0);
    let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (0.1, 10.0)
    } else {
        (lo / 1.4, hi * 1.4)
    }
}

/// The labelled values of a log axis over `lo..hi`: the sparsest of
/// powers of ten (every other one past a dozen), 1-2-5 steps, 1-2-3-5-7
/// steps and every integer multiple that gives five labels or more, so
/// that a narrow range (40 to 90 ns) is labelled across, not at one point.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let within = |steps: &[f64]| {
        (first..=last)
            .flat_map(|k| steps.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|t| *t >= lo && *t <= hi)
            .collect::<Vec<f64>>()
    };
    let decades = within(&[1.0]);
    if decades.len() >= 5 {
        let every = decades.len().div_ceil(12);
        return decades.into_iter().step_by(every).collect();
    }
    for steps in [&[1.0, 2.0, 5.0][..], &[1.0, 2.0, 3.0, 5.0, 7.0]] {
        let t = within(steps);
        if t.len() >= 5 {
            return t;
        }
    }
    within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
}

/// How an axis labels a value.
pub fn tick_label(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0e}", v)
    } else if v >= 1.0 {
        format!("{}", (v * 100.0).round() / 100.0)
    } else {
        format!("{}", (v * 1e4).round() / 1e4)
    }
}

fn legend_of(series: &[Series]) -> Vec<LegendEntry> {
    drawn(series)
        .map(|s| LegendEntry {
            name: s.name.clone(),
            color: color_hex(s.color),
            marker: marker(s.color),
            peer: s.peer,
        })
        .collect()
}

/// Every series at every column: the drawn ones first.
fn table_of(columns: Vec<String>, xs: &[f64], series: &[Series]) -> Table {
    let shown: Vec<&Series> = drawn(series).collect();
    let rest = series
        .iter()
        .filter(|s| !shown.iter().any(|d| std::ptr::eq(*d, *s)));
    let rows = shown
        .iter()
        .copied()
        .chain(rest)
        .map(|s| TableRow {
            name: s.name.clone(),
            role: s.role.clone(),
            drawn: shown
                .iter()
                .any(|d| std::ptr::eq(*d, s))
                .then(|| (color_hex(s.color), marker(s.color))),
            cells: xs
                .iter()
                .map(|x| {
                    s.points
                        .iter()
                        .find(|p| p.0 == *x)
                        .and_then(|p| p.1)
                        .map_or_else(|| "–".to_owned(), fmt_num)
                })
                .collect(),
        })
        .collect();
    Table { columns, rows }
}

/// A line chart with a log y axis.
///
/// # Errors
///
/// The drawing error.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x: &XAxis,
    series: &[Series],
) -> Result<Drawn, ChartError> {
    let mut svg = String::new();
    let (ylo, yhi) = log_range(series);
    let y_ticks = log_ticks(ylo, yhi);
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    {
        let whole = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        whole.fill(&WHITE).map_err(err)?;
        let (root, side) = whole.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        legend(&side, series, false)?;
        let y = (ylo..yhi).log_scale().with_key_points(y_ticks.clone());
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70);
        match x {
            XAxis::Categories(names) => {
                let n = names.len().max(1);
                let mut chart = builder
                    .build_cartesian_2d(-0.5f64..n as f64 - 0.5, y)
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_labels(0)
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .y_label_formatter(&|v| tick_label(*v))
                    .draw()
                    .map_err(err)?;
                category_labels(&root, &chart, names, ylo)?;
                draw_lines(&mut chart, series, ylo * 1.15)?;
            }
            XAxis::Log => {
                let (xlo, xhi) = match (xs.first(), xs.last()) {
                    (Some(a), Some(b)) if *a > 0.0 => (a / 1.5, b * 1.5),
                    _ => (1.0, 10.0),
                };
                let mut chart = builder
                    .build_cartesian_2d((xlo..xhi).log_scale().with_key_points(xs.clone()), y)
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .x_label_formatter(&|v| crate::spec::format_count(v.round() as u64))
                    .y_label_formatter(&|v| tick_label(*v))
                    .draw()
                    .map_err(err)?;
                draw_lines(&mut chart, series, ylo * 1.15)?;
            }
        }
        whole.present().map_err(err)?;
    }
    let columns = match x {
        XAxis::Categories(names) => names.iter().map(|n| n.replace('\n', " ")).collect(),
        XAxis::Log => xs
            .iter()
            .map(|x| crate::spec::format_count(x.round() as u64))
            .collect(),
    };
    Ok(finish(svg, series, (ylo, yhi), y_ticks, columns, &xs))
}

/// A drawn chart with its legend, axis and table.
fn finish(
    svg: String,
    series: &[Series],
    y_range: (f64, f64),
    y_ticks: Vec<f64>,
    columns: Vec<String>,
    xs: &[f64],
) -> Drawn {
    Drawn {
        svg,
        legend: legend_of(series),
        y_range,
        y_ticks,
        table: table_of(columns, xs, series),
    }
}

/// Width of the legend column at the right of every chart.
const LEGEND_WIDTH: u32 = 210;

/// Draws the legend in its own column, one row per drawn series: its
/// marker on a sample of its line (dashed for a peer) or its bar.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &[Series],
    bars: bool,
) -> Result<(), ChartError> {
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in drawn(series).enumerate() {
        let y = 50 + i as i32 * 22;
        let c = color(s.color);
        if bars {
            let fill = if s.peer {
                c.mix(0.55).filled()
            } else {
                c.filled()
            };
            area.draw(&Rectangle::new([(6, y - 7), (28, y + 7)], fill))
                .map_err(err)?;
        } else if s.peer {
            area.draw(&PathElement::new(vec![(4, y), (11, y)], c.stroke_width(2)))
                .map_err(err)?;
            area.draw(&PathElement::new(vec![(23, y), (30, y)], c.stroke_width(2)))
                .map_err(err)?;
        } else {
            area.draw(&PathElement::new(vec![(4, y), (30, y)], c.stroke_width(2)))
                .map_err(err)?;
        }
        let mc = if bars { BLACK } else { c };
        draw_marker!(marker(s.color), (17, y), mc, |e| area.draw(&e).map_err(err))?;
        let name = if s.peer {
            format!("{} (peer)", s.name)
        } else {
            s.name.clone()
        };
        area.draw(&Text::new(name, (36, y), style.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Writes category names under the x axis, centred on 0, 1, 2, …; a `\n`
/// in a name starts a second line.
fn category_labels<'a, Y: Ranged<ValueType = f64>>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    chart: &ChartContext<
        'a,
        SVGBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    names: &[String],
    ylo: f64,
) -> Result<(), ChartError> {
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, ylo));
        for (k, line) in name.split('\n').enumerate() {
            root.draw(&Text::new(
                line.to_owned(),
                (x, y + 6 + 15 * k as i32),
                style.clone(),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// Marks the figures that are exactly zero (a log axis cannot show them):
/// a hollow triangle on the axis floor at `x + dx`.
fn zeros<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    s: &Series,
    dx: f64,
    floor: f64,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let c = color(s.color);
    let marks: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter(|p| p.1 == Some(0.0))
        .map(|p| (p.0 + dx, floor))
        .collect();
    chart
        .draw_series(
            marks
                .into_iter()
                .map(|p| TriangleMarker::new(p, 7, c.stroke_width(2))),
        )
        .map_err(err)?;
    Ok(())
}

fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[Series],
    floor: f64,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for s in drawn(series) {
        let c = color(s.color);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|&(x, y)| y.filter(|v| *v > 0.0).map(|y| (x, y)))
            .collect();
        zeros(chart, s, 0.0, floor)?;
        if pts.is_empty() {
            continue;
        }
        let style = c.stroke_width(2);
        if s.peer {
            chart
                .draw_series(DashedLineSeries::new(pts.clone(), 8, 4, style))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(err)?;
        }
        let m = marker(s.color);
        for &p in &pts {
            draw_marker!(m, p, c, |e| chart.plotting_area().draw(&e).map_err(err))?;
        }
    }
    Ok(())
}

/// Grouped bars over categories, log y axis; each bar carries its
/// series' marker on top.
///
/// # Errors
///
/// The drawing error.
pub fn bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Series],
) -> Result<Drawn, ChartError> {
    let mut svg = String::new();
    let (ylo, yhi) = log_range(series);
    let y_ticks = log_ticks(ylo, yhi);
    {
        let whole = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        whole.fill(&WHITE).map_err(err)?;
        let (root, side) = whole.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        legend(&side, series, true)?;
        let n = categories.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(
                -0.5f64..n as f64 - 0.5,
                (ylo..yhi).log_scale().with_key_points(y_ticks.clone()),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_desc)
            .y_label_formatter(&|v| tick_label(*v))
            .draw()
            .map_err(err)?;
        category_labels(&root, &chart, categories, ylo)?;
        let shown: Vec<&Series> = drawn(series).collect();
        let k = shown.len().max(1) as f64;
        let width = 0.8 / k;
        for (j, s) in shown.iter().enumerate() {
            let c = color(s.color);
            let x0 = -0.4 + j as f64 * width;
            let tops: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter_map(|&(x, y)| y.filter(|v| *v > 0.0).map(|y| (x + x0, y)))
                .collect();
            let style = if s.peer {
                c.mix(0.55).filled()
            } else {
                c.filled()
            };
            let rects: Vec<Rectangle<(f64, f64)>> = tops
                .iter()
                .map(|&(x, y)| Rectangle::new([(x, ylo), (x + width * 0.9, y)], style))
                .collect();
            zeros(&mut chart, s, x0 + width * 0.45, ylo * 1.15)?;
            if rects.is_empty() {
                continue;
            }
            chart.draw_series(rects).map_err(err)?;
            let m = marker(s.color);
            for &(x, y) in &tops {
                let at = (x + width * 0.45, y);
                draw_marker!(m, at, BLACK, |e| chart
                    .plotting_area()
                    .draw(&e)
                    .map_err(err))?;
            }
        }
        whole.present().map_err(err)?;
    }
    let xs: Vec<f64> = (0..categories.len()).map(|i| i as f64).collect();
    let columns = categories.iter().map(|n| n.replace('\n', " ")).collect();
    Ok(finish(svg, series, (ylo, yhi), y_ticks, columns, &xs))
}

#[cfg(test)]
mod test {
    use super::*;

    /// A narrow range (the cheapest subjects at 40-90 ns with the rest up
    /// to 600) is labelled from its bottom to its top; a wide one by
    /// decades, thinned past a dozen.
    #[test]
    fn log_ticks_label_the_whole_range() {
        let t = log_ticks(40.0 / 1.4, 600.0 * 1.4);
        assert_eq!(t, [30.0, 50.0, 70.0, 100.0, 200.0, 300.0, 500.0, 700.0]);
        let t = log_ticks(40.0 / 1.4, 90.0 * 1.4);
        assert_eq!(t, [30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0]);
        let t = log_ticks(5.0, 2000.0);
        assert_eq!(
            t,
            [5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]
        );
        let t = log_ticks(0.5, 2e6);
        assert_eq!(t.first(), Some(&1.0));
        assert_eq!(t.len(), 7);
        let t = log_ticks(1e-3, 1e20);
        assert!(t.len() <= 12 && t[0] == 1e-3, "{t:?}");
        assert!(log_ticks(0.0, 1.0).is_empty());
    }

    /// Colours far apart: every pair of the palette differs by more than
    /// 20 in CIELAB (ΔE76; 2.3 is a just-noticeable difference).
    #[test]
    fn the_palette_has_no_near_shades() {
        fn lab(RGBColor(r, g, b): RGBColor) -> [f64; 3] {
            let lin = |c: u8| {
                let c = f64::from(c) / 255.0;
                if c <= 0.04045 {
                    c / 12.92
                } else {
                    ((c + 0.055) / 1.055).powf(2.4)
                }
            };
            let (r, g, b) = (lin(r), lin(g), lin(b));
            let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
            let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
            let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
            let f = |t: f64| {
                if t > 0.008856 {
                    t.cbrt()
                } else {
                    7.787 * t + 16.0 / 116.0
                }
            };
            [
                116.0 * f(y) - 16.0,
                500.0 * (f(x) - f(y)),
                200.0 * (f(y) - f(z)),
            ]
        }
        for (i, ci) in PALETTE.iter().enumerate() {
            for (j, cj) in PALETTE[..i].iter().enumerate() {
                let (a, b) = (lab(*ci), lab(*cj));
                let d = a
                    .iter()
                    .zip(&b)
                    .map(|(p, q)| (p - q).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d > 20.0, "colours {i} and {j} are {d:.1} apart");
            }
        }
        let mut glyphs: Vec<char> = MARKERS.iter().map(|m| m.glyph()).collect();
        glyphs.dedup();
        assert_eq!(glyphs.len(), MAX_LINES);
    }
}
