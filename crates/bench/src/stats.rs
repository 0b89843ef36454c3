//! Median and 95th percentile of a set of samples.

use std::time::Duration;

#[derive(Debug)]
pub struct Stats {
    sorted: Vec<Duration>,
}

impl Stats {
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Self { sorted: samples }
    }

    fn at(&self, quantile: f64) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.sorted.len() - 1) as f64 * quantile).round() as usize;
        self.sorted[i.min(self.sorted.len() - 1)]
    }

    pub fn median_ms(&self) -> f64 {
        self.at(0.5).as_secs_f64() * 1e3
    }

    pub fn p95_ms(&self) -> f64 {
        self.at(0.95).as_secs_f64() * 1e3
    }
}
