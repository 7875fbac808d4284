// BullMQ as the peer of the Redis scheduler in the workbench's `distributed`
// workload: the same drain and paced shapes, run the way BullMQ's users run
// it (Queue.addBulk with `delay`, Worker with `concurrency`, default job
// options), against the Redis server the workbench started.
//
//   node bench.mjs --url redis://127.0.0.1:PORT/ --shape drain|paced
//       [--workers 1] [--concurrency 4] [--jobs 20000] [--window-ms 4000] [--lead-ms 1000]
//       [--timeout-s 600]
//
// Prints one JSON line in the format of `workbench redis-bench`:
// jobs/s (drain: first start to last finish; paced: first due time to last
// finish), lateness percentiles (start − due, ms, both on this host's clock,
// which is Redis's host), Redis's CPU time and command counts over the
// measured window (INFO cpu / commandstats), and the load average.
//
// Worker processes are children of this one (`node bench.mjs work ...`),
// each with one BullMQ Worker; they report every finished job to the parent.

import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Queue, Worker } from 'bullmq';
import { connection, counters, num, opts } from './common.mjs';

const QUEUE = 'workbench';

// ---- worker process -------------------------------------------------------

async function work(o) {
  const concurrency = num(o, 'concurrency', 4);
  let batch = [];
  const flush = () => {
    if (batch.length > 0) {
      process.send({ done: batch });
      batch = [];
    }
  };
  const timer = setInterval(flush, 20);
  const worker = new Worker(QUEUE, async () => {}, {
    connection: connection(o.url),
    concurrency,
  });
  worker.on('completed', (job) => {
    batch.push([job.timestamp + (job.opts.delay || 0), job.processedOn, job.finishedOn]);
    if (batch.length >= 500) flush();
  });
  worker.on('error', (e) => process.stderr.write(`bullmq worker: ${e}\n`));
  await worker.waitUntilReady();
  process.send({ ready: true });
  process.on('message', async (m) => {
    if (m.stop) {
      await worker.close();
      clearInterval(timer);
      flush();
      process.send({ stopped: true });
      process.exit(0);
    }
  });
}

// ---- benchmark (parent) ---------------------------------------------------

function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length, Math.max(1, Math.ceil(sorted.length * p))) - 1;
  return sorted[i];
}

function loadAverage() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '';
  }
}

function spawnWorkers(o, n, onDone) {
  return Promise.all(
    Array.from({ length: n }, () => new Promise((resolve, reject) => {
      const child = fork(process.argv[1], ['work', '--url', o.url, '--concurrency', String(num(o, 'concurrency', 4))]);
      child.on('message', (m) => {
        if (m.ready) resolve(child);
        if (m.done) onDone(m.done);
      });
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== 0) reject(new Error(`bullmq worker exited with ${code}`));
      });
    })),
  );
}

function stopWorkers(children) {
  return Promise.all(children.map((c) => new Promise((resolve) => {
    c.on('message', (m) => {
      if (m.stopped) resolve();
    });
    c.send({ stop: true });
  })));
}

async function bench(o) {
  const shape = o.shape || 'paced';
  if (shape !== 'drain' && shape !== 'paced') throw new Error(`--shape wants drain or paced, got ${shape}`);
  const drain = shape === 'drain';
  const workers = num(o, 'workers', 1);
  const jobs = num(o, 'jobs', 20000);
  const window = drain ? 0 : num(o, 'window-ms', 4000);
  const lead = num(o, 'lead-ms', 1000);
  const admin = connection(o.url);
  const queue = new Queue(QUEUE, { connection: connection(o.url) });
  await queue.waitUntilReady();

  const runs = [];
  let finished = 0;
  let allDone;
  const done = new Promise((r) => { allDone = r; });
  const onDone = (list) => {
    for (const r of list) runs.push(r);
    finished += list.length;
    if (finished >= jobs) allDone();
  };

  const add = async (start) => {
    const now = Date.now();
    const list = [];
    for (let i = 0; i < jobs; i++) {
      const due = start + (jobs > 1 ? Math.floor((window * i) / (jobs - 1)) : 0);
      list.push({ name: 'noop', data: {}, opts: { delay: Math.max(0, due - now) } });
    }
    for (let i = 0; i < list.length; i += 1000) await queue.addBulk(list.slice(i, i + 1000));
  };

  let children = [];
  let firstDue;
  if (drain) {
    // The backlog is due before any worker starts.
    firstDue = Date.now() + 1;
    await add(firstDue);
    while (Date.now() <= firstDue + 1) await new Promise((r) => setTimeout(r, 1));
  } else {
    children = await spawnWorkers(o, workers, onDone);
    firstDue = Date.now() + lead;
    await add(firstDue);
    while (Date.now() < firstDue) await new Promise((r) => setTimeout(r, 1));
  }
  await admin.config('RESETSTAT');
  const before = counters(await admin.info('cpu'));
  if (drain) children = await spawnWorkers(o, workers, onDone);
  // As the Rust benchmark: a run that does not finish fails (after 600 s by
  // default) rather than hanging the workbench.
  const limit = num(o, 'timeout-s', 600);
  const deadline = setTimeout(() => {
    process.stderr.write(`bench.mjs: ${finished} of ${jobs} jobs finished after ${limit} s\n`);
    for (const c of children) c.kill('SIGKILL');
    process.exit(1);
  }, limit * 1000);
  await done;
  clearTimeout(deadline);
  const after = counters(`${await admin.info('commandstats')}\n${await admin.info('cpu')}`);
  const load = loadAverage();
  await stopWorkers(children);

  const lateness = runs.map(([due, start]) => start - due).sort((a, b) => a - b);
  const from = drain ? Math.min(...runs.map((r) => r[1])) : firstDue;
  const last = Math.max(...runs.map((r) => r[2]));
  const elapsed = Math.max(1, last - from);
  const cpuMs = (after.cpu - before.cpu) * 1000;
  const calls = {};
  for (const [k, v] of Object.entries(after.calls)) {
    if (!['info', 'config|resetstat'].includes(k) && v > 0) calls[k] = v;
  }
  console.log(JSON.stringify({
    shape, peer: 'bullmq', workers, concurrency: num(o, 'concurrency', 4), jobs, window_ms: window,
    runs: runs.length, elapsed_ms: elapsed, jobs_per_sec: Math.round((jobs * 1000) / elapsed),
    lateness_ms: {
      p50: percentile(lateness, 0.5), p90: percentile(lateness, 0.9),
      p99: percentile(lateness, 0.99), max: lateness[lateness.length - 1] ?? 0,
    },
    redis: {
      cpu_ms: Math.round(cpuMs * 100) / 100,
      cpu_us_per_job: Math.round((cpuMs * 1000 * 100) / jobs) / 100,
      calls,
    },
    load,
  }));
  await queue.close();
  // The connections handed to BullMQ stay open after close(): end here.
  process.exit(0);
}

const [mode, ...rest] = process.argv.slice(2);
const o = opts(mode === 'work' ? rest : process.argv.slice(2));
if (!o.url) {
  process.stderr.write('bench.mjs: --url is required\n');
  process.exit(2);
}
(mode === 'work' ? work(o) : bench(o)).catch((e) => {
  process.stderr.write(`bench.mjs: ${e.stack || e}\n`);
  process.exit(1);
});
