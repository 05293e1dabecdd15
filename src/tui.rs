//! `--monitor SECS --tui`: a full-screen live view of the running
//! scx_fastpath, read from its scx_stats socket like `--monitor`: a row per
//! CPU, sparklines of the headline rates, the kernel's sched_ext event
//! counters and the tunables in force.
//!
//! A thread samples the socket every SECS and sends what it gets over a
//! channel; the main thread draws and reads the keyboard. The terminal is
//! put back as it was by a guard when the dashboard ends, however it ends
//! (q, Esc, Ctrl-C, SIGTERM, an error, or a panic).

use std::collections::{BTreeMap, VecDeque};
use std::io::{ErrorKind, IsTerminal, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{
    Block, Borders, Cell, Paragraph, RenderDirection, Row, Sparkline, Table, Wrap,
};
use ratatui::{Frame, Terminal};
use scx_stats::prelude::*;

use crate::live::SOCKET;
use crate::stats::{share_pct, CpuMetrics, Metrics};
use crate::tunables::{config_ablates, Id};

/// Samples kept for the sparklines.
const HISTORY: usize = 60;
/// How long the keyboard is waited for between looks at the samples.
const TICK: Duration = Duration::from_millis(100);
/// How often to retry when no scheduler serves the socket.
const RETRY: Duration = Duration::from_secs(1);

/// What the sampling thread reports.
enum Msg {
    Sample(Box<Metrics>),
    /// No scheduler answers on the socket (not started yet, or gone).
    Waiting,
    /// The socket cannot be used at all (e.g. not root): give up.
    Failed(anyhow::Error),
}

/// Sleep `d`, in short steps, unless `stop` is set.
fn nap(d: Duration, stop: &AtomicBool) {
    let until = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        thread::sleep(left.min(TICK));
    }
}

/// The sampling thread: connect (waiting for a scheduler as long as it
/// takes), ask for Metrics every `every`, reconnect when the scheduler goes
/// away. Returns when `stop` is set or the UI has gone.
fn sample(every: Duration, stop: &AtomicBool, tx: &Sender<Msg>) {
    while !stop.load(Ordering::SeqCst) {
        let mut client = match StatsClient::new().set_path(SOCKET).connect(Some(5000)) {
            Ok(c) => c,
            Err(e) => {
                let kind = e.downcast_ref::<std::io::Error>().map(|e| e.kind());
                if matches!(
                    kind,
                    Some(ErrorKind::NotFound | ErrorKind::ConnectionRefused)
                ) {
                    if tx.send(Msg::Waiting).is_err() {
                        return;
                    }
                    nap(RETRY, stop);
                    continue;
                }
                let hint = if kind == Some(ErrorKind::PermissionDenied) {
                    " (monitoring needs root)"
                } else {
                    ""
                };
                let _ = tx.send(Msg::Failed(
                    e.context(format!("cannot connect to {SOCKET}{hint}")),
                ));
                return;
            }
        };
        while !stop.load(Ordering::SeqCst) {
            match client.request::<Metrics>("stats", vec![]) {
                Ok(m) => {
                    if tx.send(Msg::Sample(Box::new(m))).is_err() {
                        return;
                    }
                    nap(every, stop);
                }
                Err(_) => {
                    // The scheduler exited or is restarting.
                    if tx.send(Msg::Waiting).is_err() {
                        return;
                    }
                    nap(RETRY, stop);
                    break;
                }
            }
        }
    }
}

/// Per second, over one sampling interval: a CPU's figures (or all CPUs').
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RateRow {
    queued: u64,
    placed: f64,
    fastpath: f64,
    dispatched: f64,
    stolen: f64,
    preempted: f64,
}

impl RateRow {
    fn new(now: &CpuMetrics, prev: &CpuMetrics, secs: f64) -> Self {
        let r = |a: u64, b: u64| a.wrapping_sub(b) as f64 / secs;
        Self {
            queued: now.queued,
            placed: r(now.placed, prev.placed),
            fastpath: r(now.fastpath, prev.fastpath),
            dispatched: r(now.dispatched, prev.dispatched),
            stolen: r(now.stolen, prev.stolen),
            preempted: r(now.preempted, prev.preempted),
        }
    }

    /// Share of placements that took a fast path, in percent.
    fn fastpath_pct(&self) -> f64 {
        share_pct(self.fastpath, self.placed)
    }
}

/// The rates between two samples of the same scheduler run.
#[derive(Debug, Default, PartialEq)]
struct Rates {
    all: RateRow,
    cpus: Vec<RateRow>,
    /// Per second, by the kernel's name for the event.
    events: BTreeMap<String, f64>,
}

impl Rates {
    /// None unless `now` follows `prev` in the same run.
    fn between(now: &Metrics, prev: &Metrics) -> Option<Self> {
        if now.at_ms <= prev.at_ms {
            return None;
        }
        let secs = now.secs_since(prev);
        let totals = |m: &Metrics| CpuMetrics::from_counts(&m.counters.to_array(), m.queued);
        Some(Self {
            all: RateRow::new(&totals(now), &totals(prev), secs),
            cpus: now
                .cpus
                .iter()
                .zip(prev.cpus.iter())
                .map(|(n, p)| RateRow::new(n, p, secs))
                .collect(),
            events: now
                .kernel_events
                .iter()
                .map(|(name, &v)| {
                    let d = prev
                        .kernel_events
                        .get(name)
                        .map_or(0, |&p| v.wrapping_sub(p));
                    (name.clone(), d as f64 / secs)
                })
                .collect(),
        })
    }
}

/// The sparklines' figures at one sample.
#[derive(Clone, Copy, Debug, Default)]
struct Headline {
    placed: u64,
    fastpath_pct: u64,
    stolen: u64,
}

#[derive(Debug, PartialEq)]
enum Action {
    Stay,
    Quit,
}

/// What the dashboard shows.
struct App {
    every: Duration,
    waiting: bool,
    now: Option<Metrics>,
    rates: Option<Rates>,
    history: VecDeque<Headline>,
    /// First CPU row shown.
    scroll: usize,
}

impl App {
    fn new(every: Duration) -> Self {
        Self {
            every,
            waiting: true,
            now: None,
            rates: None,
            history: VecDeque::with_capacity(HISTORY),
            scroll: 0,
        }
    }

    fn push(&mut self, m: Metrics) {
        self.waiting = false;
        self.rates = self.now.as_ref().and_then(|prev| Rates::between(&m, prev));
        match &self.rates {
            Some(r) => {
                if self.history.len() == HISTORY {
                    self.history.pop_front();
                }
                self.history.push_back(Headline {
                    placed: r.all.placed.round() as u64,
                    fastpath_pct: r.all.fastpath_pct().round() as u64,
                    stolen: r.all.stolen.round() as u64,
                });
            }
            // A restarted scheduler: its counters start again.
            None => self.history.clear(),
        }
        self.now = Some(m);
    }

    fn key(&mut self, k: KeyEvent) -> Action {
        let ncpus = self.now.as_ref().map_or(0, |m| m.cpus.len());
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                return Action::Quit
            }
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown => self.scroll += 10,
            KeyCode::Home => self.scroll = 0,
            _ => {}
        }
        self.scroll = self.scroll.min(ncpus.saturating_sub(1));
        Action::Stay
    }
}

/// A rate, short enough for its column.
fn fmt_rate(v: f64) -> String {
    if v >= 1e7 {
        format!("{:.0}M", v / 1e6)
    } else if v >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn fmt_uptime(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
}

/// Lines `text` takes when word-wrapped to `width` columns.
fn wrapped_lines(text: &str, width: u16) -> u16 {
    let width = usize::from(width.max(1));
    let (mut lines, mut col) = (1u16, 0usize);
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if col > 0 && col + 1 + len > width {
            lines = lines.saturating_add(1);
            col = 0;
        }
        col += if col > 0 { 1 + len } else { len };
        // A word longer than the line fills whole lines by itself.
        while col > width {
            lines = lines.saturating_add(1);
            col -= width;
        }
    }
    lines
}

/// SCX_EV_SELECT_CPU_FALLBACK -> select_cpu_fallback.
fn event_name(name: &str) -> String {
    name.strip_prefix("SCX_EV_")
        .unwrap_or(name)
        .to_ascii_lowercase()
}

fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    let Some(now) = app.now.as_ref().filter(|_| !app.waiting) else {
        let text = vec![
            Line::from(""),
            Line::from("waiting for scx_fastpath..."),
            Line::from(format!("(no scheduler answers on {SOCKET} yet)")),
            Line::from(""),
            Line::from("q quits"),
        ];
        f.render_widget(
            Paragraph::new(text).alignment(Alignment::Center).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" scx_fastpath "),
            ),
            area,
        );
        return;
    };

    let tunables = format!("tunables: {}", now.config);
    let tun_h = wrapped_lines(&tunables, area.width).min(4);
    let [title, tun, sparks, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(tun_h),
        Constraint::Length(4),
        Constraint::Min(0),
    ])
    .areas(area);

    let version = now.version.split_whitespace().next().unwrap_or("(unknown)");
    let header = format!(
        " scx_fastpath {version} | up {} | every {}s | queued {} | q quits",
        fmt_uptime(now.at_ms),
        app.every.as_secs_f64(),
        now.queued
    );
    f.render_widget(
        Paragraph::new(header).style(Style::default().add_modifier(Modifier::REVERSED)),
        title,
    );
    f.render_widget(Paragraph::new(tunables).wrap(Wrap { trim: true }), tun);

    draw_sparklines(f, app, sparks);

    // The CPU table first; the kernel's events below get what they need,
    // but leave the table its header, the all row and a few CPUs.
    // Events that never happened are left out: most never do.
    let events_shown: Vec<(String, Option<f64>, u64)> = now
        .kernel_events
        .iter()
        .filter(|(_, &total)| total > 0)
        .map(|(name, &total)| {
            let rate = app.rates.as_ref().and_then(|r| r.events.get(name).copied());
            (event_name(name), rate, total)
        })
        .collect();
    let groups = if bottom.width >= 2 * 46 + 2 { 2 } else { 1 };
    let ev_rows = events_shown.len().div_ceil(groups).max(1) as u16;
    let ev_want = ev_rows + 3;
    let cpu_want = now.cpus.len() as u16 + 4;
    let cpu_h = cpu_want
        .min(bottom.height.saturating_sub(ev_want).max(7))
        .min(bottom.height);
    let [cpu_area, ev_area] =
        Layout::vertical([Constraint::Length(cpu_h), Constraint::Min(0)]).areas(bottom);
    draw_cpus(f, app, now, cpu_area);
    draw_events(f, now, &events_shown, groups, ev_area);
}

/// One sparkline: its title, which figure it plots, and its scale.
struct Series {
    title: String,
    get: fn(&Headline) -> u64,
    max: Option<u64>,
    color: Color,
}

fn draw_sparklines(f: &mut Frame, app: &App, area: Rect) {
    let cols = Layout::horizontal([Constraint::Ratio(1, 3); 3]).split(area);
    let last = app.history.back().copied();
    let now = |v: Option<u64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v}{unit}"));
    let series = [
        Series {
            title: format!(" placed/s {} ", now(last.map(|h| h.placed), "")),
            get: |h| h.placed,
            max: None,
            color: Color::Cyan,
        },
        Series {
            title: format!(" fast path {} ", now(last.map(|h| h.fastpath_pct), "%")),
            get: |h| h.fastpath_pct,
            max: Some(100),
            color: Color::Green,
        },
        Series {
            title: format!(" steals/s {} ", now(last.map(|h| h.stolen), "")),
            get: |h| h.stolen,
            max: None,
            color: Color::Yellow,
        },
    ];
    for (s, col) in series.into_iter().zip(cols.iter()) {
        // Newest first, drawn from the right edge.
        let data: Vec<u64> = app.history.iter().rev().map(s.get).collect();
        let mut line = Sparkline::default()
            .block(Block::default().borders(Borders::ALL).title(s.title))
            .data(data)
            .direction(RenderDirection::RightToLeft)
            .style(Style::default().fg(s.color));
        if let Some(m) = s.max {
            line = line.max(m);
        }
        f.render_widget(line, *col);
    }
}

/// A right-aligned cell, for numbers.
fn num(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).alignment(Alignment::Right))
}

fn rate_cells(label: String, r: Option<&RateRow>, queued: u64, counters: bool) -> Row<'static> {
    let figures = match r.filter(|_| counters) {
        Some(r) => vec![
            fmt_rate(r.placed),
            format!("{:.0}", r.fastpath_pct()),
            fmt_rate(r.dispatched),
            fmt_rate(r.stolen),
            fmt_rate(r.preempted),
        ],
        None => vec!["-".to_string(); 5],
    };
    let mut cells = vec![num(label), num(queued.to_string())];
    cells.extend(figures.into_iter().map(num));
    Row::new(cells)
}

fn draw_cpus(f: &mut Frame, app: &App, now: &Metrics, area: Rect) {
    let widths = [
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(9),
    ];
    // Without the compact layout the BPF side keeps no per-CPU counters.
    let per_cpu = !config_ablates(&now.config, Id::CompactLayout);
    let rates = app.rates.as_ref();
    let visible = usize::from(area.height.saturating_sub(4));
    let n = now.cpus.len();
    let first = app.scroll.min(n.saturating_sub(visible));
    let mut rows = vec![
        rate_cells("all".into(), rates.map(|r| &r.all), now.queued, true)
            .style(Style::default().add_modifier(Modifier::BOLD)),
    ];
    rows.extend(
        now.cpus
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(cpu, c)| {
                rate_cells(
                    cpu.to_string(),
                    rates.and_then(|r| r.cpus.get(cpu)),
                    c.queued,
                    per_cpu,
                )
            }),
    );
    let title = if n > visible {
        format!(
            " per CPU: {}-{} of {} (up/down scrolls) ",
            first,
            (first + visible).min(n).saturating_sub(1),
            n
        )
    } else if per_cpu {
        " per CPU ".to_string()
    } else {
        " per CPU (counters not kept per CPU without the compact layout) ".to_string()
    };
    let header = Row::new(
        [
            "cpu",
            "queue",
            "placed/s",
            "fast %",
            "disp/s",
            "steal/s",
            "preempt/s",
        ]
        .map(|h| num(h.to_string())),
    )
    .style(Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

fn draw_events(
    f: &mut Frame,
    now: &Metrics,
    shown: &[(String, Option<f64>, u64)],
    groups: usize,
    area: Rect,
) {
    if area.height < 3 {
        return;
    }
    let hidden = now.kernel_events.len().saturating_sub(shown.len());
    let title = if now.kernel_events.is_empty() {
        " kernel sched_ext events ".to_string()
    } else {
        format!(" kernel sched_ext events ({hidden} more at 0) ")
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if now.kernel_events.is_empty() {
        f.render_widget(
            Paragraph::new(format!(
                "none: this kernel has no {}",
                crate::stats::KERNEL_EVENTS
            )),
            inner,
        );
        return;
    }
    let per_group = shown.len().div_ceil(groups).max(1);
    let cols = Layout::horizontal(vec![Constraint::Ratio(1, groups as u32); groups])
        .spacing(3)
        .split(inner);
    for (chunk, col) in shown.chunks(per_group).zip(cols.iter()) {
        let rows = chunk.iter().map(|(name, rate, total)| {
            Row::new([
                Cell::from(name.as_str()),
                num(rate.map_or("-".into(), fmt_rate)),
                num(total.to_string()),
            ])
        });
        let header = Row::new([Cell::from("event"), num("/s".into()), num("total".into())])
            .style(Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        f.render_widget(
            Table::new(
                rows,
                [
                    Constraint::Fill(1),
                    Constraint::Length(7),
                    Constraint::Length(12),
                ],
            )
            .header(header),
            *col,
        );
    }
}

/// Puts the terminal back: cooked mode, main screen, cursor shown. Safe to
/// call more than once.
fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
}

/// The terminal in raw mode on the alternate screen while this lives.
struct TerminalGuard;

impl TerminalGuard {
    fn new() -> Result<Self> {
        terminal::enable_raw_mode().context("failed to put the terminal in raw mode")?;
        // From here on, dropping the guard restores whatever was changed.
        let guard = TerminalGuard;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )
        .context("failed to switch to the alternate screen")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn ui_loop(
    term: &mut Terminal<CrosstermBackend<Stdout>>,
    rx: &Receiver<Msg>,
    stop: &AtomicBool,
    every: Duration,
) -> Result<()> {
    let mut app = App::new(every);
    loop {
        term.draw(|f| draw(f, &app))
            .context("failed to draw the dashboard")?;
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        if event::poll(TICK).context("failed to read the terminal")? {
            if let Event::Key(k) = event::read().context("failed to read the terminal")? {
                if k.kind == KeyEventKind::Press && app.key(k) == Action::Quit {
                    return Ok(());
                }
            }
        }
        loop {
            match rx.try_recv() {
                Ok(Msg::Sample(m)) => app.push(*m),
                Ok(Msg::Waiting) => app.waiting = true,
                Ok(Msg::Failed(e)) => return Err(e),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) if stop.load(Ordering::SeqCst) => return Ok(()),
                Err(TryRecvError::Disconnected) => bail!("the sampling thread stopped"),
            }
        }
    }
}

/// Run the dashboard until q, Esc, Ctrl-C or SIGTERM.
pub fn run(every: Duration) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("--tui needs a terminal (standard output is not one)");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stop_handler = Arc::clone(&stop);
    ctrlc::set_handler(move || stop_handler.store(true, Ordering::SeqCst))
        .context("failed to install the SIGINT/SIGTERM handler")?;

    let (tx, rx) = mpsc::channel();
    let stop_sampler = Arc::clone(&stop);
    thread::Builder::new()
        .name("tui-sampler".into())
        .spawn(move || sample(every, &stop_sampler, &tx))
        .context("failed to start the sampling thread")?;

    // A panic's message must land on the main screen, in cooked mode.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        default_hook(info);
    }));

    let guard = TerminalGuard::new()?;
    let res = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .context("failed to set up the terminal")
        .and_then(|mut term| ui_loop(&mut term, &rx, &stop, every));
    stop.store(true, Ordering::SeqCst);
    drop(guard);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Counters, NR_STATS};
    use ratatui::backend::TestBackend;
    use std::collections::BTreeMap;

    fn sample(at_ms: u64, scale: u64, ncpus: usize) -> Metrics {
        let mut cnt = [0u64; NR_STATS];
        cnt[crate::bpf_intf::fp_stat_idx_FP_STAT_ENQ_QUEUED as usize] = 100 * scale;
        cnt[crate::bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREV_IDLE as usize] = 50 * scale;
        cnt[crate::bpf_intf::fp_stat_idx_FP_STAT_DISP_STOLEN as usize] = 10 * scale;
        let mut per_cpu = cnt;
        for v in per_cpu.iter_mut() {
            *v /= ncpus as u64;
        }
        Metrics {
            at_ms,
            config: crate::tunables::Settings::default().describe(),
            queued: 3,
            counters: Counters::from_array(&cnt),
            version: "0.1.0-gabc x86_64-unknown-linux-gnu".into(),
            cpus: (0..ncpus)
                .map(|_| CpuMetrics::from_counts(&per_cpu, 1))
                .collect(),
            kernel_events: BTreeMap::from([
                ("SCX_EV_SELECT_CPU_FALLBACK".to_string(), 7 * scale),
                ("SCX_EV_BYPASS_ACTIVATE".to_string(), 0),
            ]),
            ..Default::default()
        }
    }

    fn screen(app: &App, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
        term.draw(|f| draw(f, app)).expect("draw");
        let buf = term.backend().buffer();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    + "\n"
            })
            .collect()
    }

    #[test]
    fn rates_per_second_and_restarts() {
        let (a, b) = (sample(1000, 1, 2), sample(3000, 3, 2));
        let r = Rates::between(&b, &a).expect("same run");
        // placed: enq_queued + wake_prev_idle, 150 -> 450 over 2 s.
        assert_eq!(r.all.placed, 150.0);
        assert_eq!(r.all.fastpath_pct().round(), 33.0);
        assert_eq!(r.all.stolen, 10.0);
        assert_eq!(r.cpus.len(), 2);
        assert_eq!(r.cpus[0].placed, 75.0);
        assert_eq!(r.events["SCX_EV_SELECT_CPU_FALLBACK"], 7.0);
        assert!(Rates::between(&a, &b).is_none(), "a restart has no rates");

        let mut app = App::new(Duration::from_secs(1));
        app.push(a.clone());
        app.push(b.clone());
        assert_eq!(app.history.len(), 1);
        app.push(a);
        assert!(app.history.is_empty() && app.rates.is_none());
    }

    /// An app that has seen two samples a second apart, of `ncpus` CPUs.
    fn two_samples(ncpus: usize) -> App {
        let mut app = App::new(Duration::from_secs(1));
        app.push(sample(1000, 1, ncpus));
        app.push(sample(2000, 2, ncpus));
        app
    }

    #[test]
    fn fits_80x24() {
        let app = two_samples(2);
        let s = screen(&app, 80, 24);
        assert!(s.contains("scx_fastpath 0.1.0-gabc | up 0h00m02s"), "{s}");
        assert!(s.contains("tunables: slice-us=5000"), "{s}");
        assert!(s.contains("ablate=none"), "{s}");
        assert!(s.contains("placed/s 150"), "{s}");
        assert!(s.contains("fast path 33%"), "{s}");
        assert!(s.contains("steals/s 10"), "{s}");
        let rows: Vec<Vec<&str>> = s
            .lines()
            .map(|l| {
                l.trim_matches(|c| c == '│' || c == ' ')
                    .split_whitespace()
                    .collect()
            })
            .collect();
        let row = |first: &str| rows.iter().find(|r| r.first() == Some(&first)).cloned();
        assert_eq!(
            row("all"),
            Some(vec!["all", "3", "150", "33", "10", "10", "0"]),
            "{s}"
        );
        assert_eq!(
            row("0"),
            Some(vec!["0", "1", "75", "33", "5", "5", "0"]),
            "{s}"
        );
        assert!(row("1").is_some(), "{s}");
        assert!(s.contains("select_cpu_fallback"), "{s}");
        assert!(s.contains("(1 more at 0)"), "{s}");
        if std::env::var_os("FP_TUI_SHOW").is_some() {
            print!("{s}");
        }
    }

    #[test]
    fn many_cpus_scroll() {
        let mut app = two_samples(64);
        let s = screen(&app, 80, 24);
        assert!(s.contains("per CPU: 0-"), "{s}");
        for _ in 0..100 {
            app.key(KeyEvent::from(KeyCode::Down));
        }
        let s = screen(&app, 80, 24);
        assert!(s.contains(" of 64 (up/down scrolls)"), "{s}");
        assert!(s.contains("-63 of 64"), "{s}");
        assert_eq!(app.key(KeyEvent::from(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(app.key(KeyEvent::from(KeyCode::Esc)), Action::Quit);
        assert_eq!(
            app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Action::Quit
        );
        assert_eq!(app.key(KeyEvent::from(KeyCode::Char('c'))), Action::Stay);
    }

    #[test]
    fn first_sample_has_no_rates_yet() {
        let mut app = App::new(Duration::from_secs(1));
        app.push(sample(1000, 1, 2));
        let s = screen(&app, 80, 24);
        assert!(s.contains("placed/s - "), "{s}");
        assert!(s.contains("select_cpu_fallback"), "{s}");
        let all = s.lines().find(|l| l.contains(" all ")).unwrap_or_default();
        assert!(all.contains(" - "), "{s}");
    }

    #[test]
    fn waits_for_a_scheduler() {
        let app = App::new(Duration::from_secs(1));
        let s = screen(&app, 80, 24);
        assert!(s.contains("waiting for scx_fastpath..."), "{s}");
    }

    /// The screen after `a` and the same counters a second later.
    fn screen_after(a: Metrics, w: u16, h: u16) -> String {
        let mut b = a.clone();
        b.at_ms = a.at_ms + 1000;
        let mut app = App::new(Duration::from_secs(1));
        app.push(a);
        app.push(b);
        screen(&app, w, h)
    }

    #[test]
    fn no_kernel_events_and_no_per_cpu_counters() {
        let mut a = sample(1000, 1, 2);
        a.kernel_events.clear();
        a.config = a.config.replace("ablate=none", "ablate=compact-layout");
        let s = screen_after(a, 100, 30);
        assert!(
            s.contains("none: this kernel has no /sys/kernel/sched_ext/root/events"),
            "{s}"
        );
        assert!(s.contains("counters not kept per CPU"), "{s}");
    }

    #[test]
    fn wide_screens_show_events_in_two_columns() {
        let mut a = sample(1000, 1, 2);
        for name in ["SCX_EV_A", "SCX_EV_B", "SCX_EV_C"] {
            a.kernel_events.insert(name.into(), 5);
        }
        let s = screen_after(a, 100, 30);
        let header = s.lines().find(|l| l.contains("total")).unwrap_or_default();
        assert_eq!(header.matches("event").count(), 2, "{s}");
        assert!(header.contains("total   "), "columns run together: {s}");
    }

    #[test]
    fn wraps_like_the_paragraph() {
        assert_eq!(wrapped_lines("aaa bbb", 7), 1);
        assert_eq!(wrapped_lines("aaa bbb", 6), 2);
        assert_eq!(wrapped_lines("aaaaaaaaaa", 4), 3);
        assert_eq!(fmt_uptime(3_723_000), "1h02m03s");
        assert_eq!(fmt_rate(123_456.0), "123k");
        assert_eq!(event_name("SCX_EV_ENQ_SKIP_EXITING"), "enq_skip_exiting");
    }
}
