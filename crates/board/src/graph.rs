//! The two server-rendered pictures: the dependency graph of the open tasks and the burndown /
//! velocity chart drawn from the progress log. Plain SVG text, so the page needs no script
//! library and a screenshot shows them as they are.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use cairn_domain::log::LogRecord;
use cairn_domain::project::service::LogQuery;
use cairn_domain::project::{ProjectEvent, Task, TaskDoc, TaskStatus};

use crate::Shared;
use crate::api::{ApiResult, svg};

/// The graph shows at most this many tasks (the open ones first, in file order): a picture of
/// 10,000 boxes helps nobody, and the columns already list every task.
pub const GRAPH_LIMIT: usize = 150;

const BOX_W: usize = 170;
const BOX_H: usize = 34;
const GAP_X: usize = 50;
const GAP_Y: usize = 14;

/// Text as it may appear inside an SVG element or attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn truncate(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_owned()
    } else {
        let mut t: String = text.chars().take(chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn is_open(status: TaskStatus) -> bool {
    !matches!(status, TaskStatus::Complete | TaskStatus::Cancelled)
}

/// The CSS class a status is drawn with (the page's stylesheet colours them).
fn status_class(status: TaskStatus) -> String {
    format!(
        "s-{}",
        status.as_str().to_ascii_lowercase().replace('_', "-")
    )
}

/// Layer of each shown task: one more than the deepest dependency it has among the shown tasks.
/// A dependency cycle (a damaged file) is cut where it is met rather than looping.
fn layers<'a>(shown: &[&'a Task]) -> HashMap<&'a str, usize> {
    let by_id: HashMap<&str, &Task> = shown.iter().map(|t| (t.id.as_str(), *t)).collect();
    let mut layer: HashMap<&'a str, usize> = HashMap::new();
    fn visit<'a>(
        id: &'a str,
        by_id: &HashMap<&str, &'a Task>,
        layer: &mut HashMap<&'a str, usize>,
        on_path: &mut Vec<&'a str>,
    ) -> usize {
        if let Some(&l) = layer.get(id) {
            return l;
        }
        if on_path.contains(&id) {
            return 0;
        }
        let Some(task) = by_id.get(id) else { return 0 };
        on_path.push(id);
        let l = task
            .dependencies
            .iter()
            .filter(|d| by_id.contains_key(d.as_str()))
            .map(|d| visit(d.as_str(), by_id, layer, on_path) + 1)
            .max()
            .unwrap_or(0);
        on_path.pop();
        layer.insert(id, l);
        l
    }
    for task in shown {
        visit(task.id.as_str(), &by_id, &mut layer, &mut Vec::new());
    }
    layer
}

/// The dependency graph as SVG: open tasks left to right by dependency depth, an arrow from each
/// dependency to the task that waits on it.
pub fn render_graph(doc: &TaskDoc) -> String {
    let shown: Vec<&Task> = doc
        .tasks
        .iter()
        .filter(|t| is_open(t.status))
        .take(GRAPH_LIMIT)
        .collect();
    let open_total = doc.tasks.iter().filter(|t| is_open(t.status)).count();
    let layer = layers(&shown);
    let mut rows: BTreeMap<usize, usize> = BTreeMap::new();
    let mut place: HashMap<&str, (usize, usize)> = HashMap::new();
    for task in &shown {
        let l = layer.get(task.id.as_str()).copied().unwrap_or(0);
        let row = rows.entry(l).or_insert(0);
        place.insert(task.id.as_str(), (l, *row));
        *row += 1;
    }
    let columns = rows.keys().next_back().map_or(0, |l| l + 1);
    let height_rows = rows.values().copied().max().unwrap_or(0);
    let width = (columns * (BOX_W + GAP_X)).max(BOX_W + GAP_X) + 10;
    let height = (height_rows * (BOX_H + GAP_Y)).max(BOX_H + GAP_Y) + 40;
    let xy = |(l, r): (usize, usize)| (10 + l * (BOX_W + GAP_X), 30 + r * (BOX_H + GAP_Y));

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="dep-graph" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    out.push_str(
        r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>"#,
    );
    let caption = if shown.is_empty() {
        "No open tasks.".to_owned()
    } else if open_total > shown.len() {
        format!(
            "The first {} of {open_total} open tasks, by dependency depth.",
            shown.len()
        )
    } else {
        format!("{open_total} open tasks, by dependency depth.")
    };
    let _ = write!(
        out,
        r#"<text class="caption" x="10" y="18">{}</text>"#,
        escape(&caption)
    );
    for task in &shown {
        let Some(&to) = place.get(task.id.as_str()) else {
            continue;
        };
        for dep in &task.dependencies {
            if let Some(&from) = place.get(dep.as_str()) {
                let (x1, y1) = xy(from);
                let (x2, y2) = xy(to);
                let _ = write!(
                    out,
                    r#"<line class="edge" x1="{}" y1="{}" x2="{}" y2="{}" marker-end="url(#arrow)"/>"#,
                    x1 + BOX_W,
                    y1 + BOX_H / 2,
                    x2,
                    y2 + BOX_H / 2
                );
            }
        }
    }
    for task in &shown {
        let Some(&at) = place.get(task.id.as_str()) else {
            continue;
        };
        let (x, y) = xy(at);
        let _ = write!(
            out,
            r#"<g class="node {}" data-id="{}"><title>{} {} ({})</title><rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="5"/><text x="{}" y="{}">{} {}</text></g>"#,
            status_class(task.status),
            escape(task.id.as_str()),
            escape(task.id.as_str()),
            escape(&task.title),
            task.status,
            x + 6,
            y + BOX_H / 2 + 4,
            escape(task.id.as_str()),
            escape(&truncate(&task.title, 18)),
        );
    }
    out.push_str("</svg>");
    out
}

/// One day of the chart: how many tasks were open at its end and how many were completed in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Day {
    pub remaining: i64,
    pub completed: u32,
}

/// Replays the progress log day by day: a created task adds one open task, a move into
/// COMPLETE or CANCELLED removes one, a move out of them (reopening) adds it back. Records
/// cairn cannot read (other tools write to the log too) are skipped.
pub fn burndown_days(records: &[LogRecord]) -> BTreeMap<String, Day> {
    let mut days: BTreeMap<String, Day> = BTreeMap::new();
    let mut open: i64 = 0;
    for record in records {
        let Some(event) = ProjectEvent::from_record(record) else {
            continue;
        };
        let day = record.at.to_rfc3339().chars().take(10).collect::<String>();
        let mut completed = 0;
        match event {
            ProjectEvent::TaskCreated { .. } => open += 1,
            ProjectEvent::TaskMoved { from, to, .. } => {
                match (is_open(from), is_open(to)) {
                    (true, false) => open -= 1,
                    (false, true) => open += 1,
                    _ => {}
                }
                if to == TaskStatus::Complete {
                    completed = 1;
                }
            }
            _ => {}
        }
        let entry = days.entry(day).or_default();
        entry.remaining = open.max(0);
        entry.completed += completed;
    }
    days
}

/// The burndown line (open tasks at each day's end) over the velocity bars (completions per
/// day), as SVG.
pub fn render_burndown(days: &BTreeMap<String, Day>) -> String {
    const W: usize = 560;
    const H: usize = 200;
    const PAD: usize = 30;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="burndown" width="{W}" height="{H}" viewBox="0 0 {W} {H}">"#
    );
    if days.is_empty() {
        out.push_str(
            r#"<text class="caption" x="10" y="20">No progress recorded yet.</text></svg>"#,
        );
        return out;
    }
    let top_remaining = days.values().map(|d| d.remaining).max().unwrap_or(0).max(1) as f64;
    let top_done = days.values().map(|d| d.completed).max().unwrap_or(0).max(1) as f64;
    let n = days.len();
    let plot_w = (W - 2 * PAD) as f64;
    let plot_h = (H - 2 * PAD) as f64;
    let step = plot_w / n as f64;
    let _ = write!(
        out,
        r#"<text class="caption" x="{PAD}" y="16">Open tasks (line) and completions per day (bars), {n} day(s)</text>"#
    );
    let _ = write!(
        out,
        r#"<line class="axis" x1="{PAD}" y1="{}" x2="{}" y2="{}"/>"#,
        H - PAD,
        W - PAD,
        H - PAD
    );
    let mut points = Vec::with_capacity(n);
    for (i, (day, d)) in days.iter().enumerate() {
        let x = PAD as f64 + step * i as f64;
        let bar_h = plot_h * f64::from(d.completed) / top_done;
        let _ = write!(
            out,
            r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}: {} completed, {} open</title></rect>"#,
            x + step * 0.15,
            (H - PAD) as f64 - bar_h,
            step * 0.7,
            bar_h,
            escape(day),
            d.completed,
            d.remaining
        );
        let y = (H - PAD) as f64 - plot_h * d.remaining as f64 / top_remaining;
        points.push(format!("{:.1},{:.1}", x + step / 2.0, y));
    }
    let _ = write!(
        out,
        r#"<polyline class="remaining" fill="none" points="{}"/>"#,
        points.join(" ")
    );
    let first = days.keys().next().map(String::as_str).unwrap_or_default();
    let last = days
        .keys()
        .next_back()
        .map(String::as_str)
        .unwrap_or_default();
    let _ = write!(
        out,
        r#"<text class="tick" x="{PAD}" y="{}">{}</text><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
        H - 10,
        escape(first),
        W - PAD,
        H - 10,
        escape(last)
    );
    out.push_str("</svg>");
    out
}

/// `GET /api/graph.svg`: one `ProjectService::load`, as `cairn task list` reads the tasks.
pub async fn dependency_graph(State(shared): State<Arc<Shared>>) -> ApiResult<Response> {
    let state = shared.project_state().await?;
    Ok(svg(render_graph(&state.tasks)))
}

/// `GET /api/burndown.svg`: one `ProjectService::log`, as `cairn log` reads it.
pub async fn burndown(State(shared): State<Arc<Shared>>) -> ApiResult<Response> {
    let s = &shared.sources;
    let (records, _torn) = s
        .projects
        .log(&s.project, &LogQuery::default())
        .await
        .map_err(|e| shared.explain(e))?;
    Ok(svg(render_burndown(&burndown_days(&records))))
}
