//! SVG charts (plotters): lines over categories or a log axis, and grouped
//! bars. Every function returns the SVG text or the drawing error; nothing
//! here unwraps.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (1000, 440);

/// Colours by subject index, stable across every chart of a report: 24
/// distinct ones (Kelly's and Tableau's), so a full run's subjects never
/// share one.
const PALETTE: [RGBColor; 24] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(0, 83, 138),
    RGBColor(246, 118, 142),
    RGBColor(0, 125, 52),
    RGBColor(193, 0, 32),
    RGBColor(83, 55, 122),
    RGBColor(255, 179, 0),
    RGBColor(127, 24, 13),
    RGBColor(166, 189, 215),
    RGBColor(206, 162, 98),
    RGBColor(89, 51, 21),
    RGBColor(241, 58, 19),
    RGBColor(35, 44, 22),
    RGBColor(147, 170, 0),
];

/// The colour of subject number `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colour of subject number `i` as CSS (`#1f77b4`).
pub fn color_hex(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// One line or one set of bars: a subject.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Colour index (the subject's position in the report).
    pub color: usize,
    /// Peers are drawn dashed.
    pub peer: bool,
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

/// The (min, max) of the positive values, padded for a log axis.
fn log_range(series: &[Series]) -> (f64, f64) {
    let vals = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .filter(|v| *v > 0.0);
    let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (0.1, 10.0)
    } else {
        (lo / 1.4, hi * 1.4)
    }
}

/// How many y labels to ask for: more on a narrow log range, where
/// plotters would otherwise label only one power of ten.
fn y_label_count(lo: f64, hi: f64) -> usize {
    if (hi / lo).log10() < 1.5 {
        12
    } else {
        8
    }
}

fn fmt_value(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0e}", v)
    } else if v >= 1.0 {
        format!("{}", (v * 100.0).round() / 100.0)
    } else {
        format!("{:.2}", v)
    }
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
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let whole = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        whole.fill(&WHITE).map_err(err)?;
        let (root, side) = whole.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        legend(&side, series, false)?;
        let (ylo, yhi) = log_range(series);
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
                    .build_cartesian_2d(-0.5f64..n as f64 - 0.5, (ylo..yhi).log_scale())
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_labels(0)
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .y_labels(y_label_count(ylo, yhi))
                    .y_label_formatter(&|v| fmt_value(*v))
                    .draw()
                    .map_err(err)?;
                category_labels(&root, &chart, names, ylo)?;
                draw_lines(&mut chart, series, ylo * 1.15)?;
            }
            XAxis::Log => {
                let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
                let (xlo, xhi) = xs.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
                let (xlo, xhi) = if xlo > xhi {
                    (1.0, 10.0)
                } else {
                    (xlo / 1.5, xhi * 1.5)
                };
                let mut chart = builder
                    .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .x_label_formatter(&|v| crate::spec::format_count(v.round() as u64))
                    .y_labels(y_label_count(ylo, yhi))
                    .y_label_formatter(&|v| fmt_value(*v))
                    .draw()
                    .map_err(err)?;
                draw_lines(&mut chart, series, ylo * 1.15)?;
            }
        }
        whole.present().map_err(err)?;
    }
    Ok(svg)
}

/// Width of the legend column at the right of every chart.
const LEGEND_WIDTH: u32 = 210;

/// Draws the legend in its own column, one row per series.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &[Series],
    bars: bool,
) -> Result<(), ChartError> {
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in series.iter().enumerate() {
        let y = 50 + i as i32 * 20;
        let c = color(s.color);
        if bars {
            let fill = if s.peer {
                c.mix(0.55).filled()
            } else {
                c.filled()
            };
            area.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], fill))
                .map_err(err)?;
        } else if s.peer {
            area.draw(&PathElement::new(vec![(6, y), (14, y)], c.stroke_width(2)))
                .map_err(err)?;
            area.draw(&PathElement::new(vec![(19, y), (27, y)], c.stroke_width(2)))
                .map_err(err)?;
        } else {
            area.draw(&PathElement::new(vec![(6, y), (27, y)], c.stroke_width(2)))
                .map_err(err)?;
        }
        let name = if s.peer {
            format!("{} (peer)", s.name)
        } else {
            s.name.clone()
        };
        area.draw(&Text::new(name, (34, y), style.clone()))
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
    for s in series {
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
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    Ok(())
}

/// Grouped bars over categories, log y axis.
///
/// # Errors
///
/// The drawing error.
pub fn bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Series],
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let whole = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        whole.fill(&WHITE).map_err(err)?;
        let (root, side) = whole.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        legend(&side, series, true)?;
        let (ylo, yhi) = log_range(series);
        let n = categories.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, (ylo..yhi).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_desc)
            .y_labels(y_label_count(ylo, yhi))
            .y_label_formatter(&|v| fmt_value(*v))
            .draw()
            .map_err(err)?;
        category_labels(&root, &chart, categories, ylo)?;
        let k = series.len().max(1) as f64;
        let width = 0.8 / k;
        for (j, s) in series.iter().enumerate() {
            let c = color(s.color);
            let x0 = -0.4 + j as f64 * width;
            let rects: Vec<Rectangle<(f64, f64)>> = s
                .points
                .iter()
                .filter_map(|&(x, y)| {
                    let y = y.filter(|v| *v > 0.0)?;
                    let style = if s.peer {
                        c.mix(0.55).filled()
                    } else {
                        c.filled()
                    };
                    Some(Rectangle::new(
                        [(x + x0, ylo), (x + x0 + width * 0.9, y)],
                        style,
                    ))
                })
                .collect();
            zeros(&mut chart, s, x0 + width * 0.45, ylo * 1.15)?;
            if rects.is_empty() {
                continue;
            }
            chart.draw_series(rects).map_err(err)?;
        }
        whole.present().map_err(err)?;
    }
    Ok(svg)
}
