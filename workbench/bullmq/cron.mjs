// BullMQ's job schedulers on the workbench's `calendar` workload, run the way
// BullMQ's users run them: Queue.upsertJobScheduler with a cron pattern (six
// fields, seconds first) in a time zone, one Worker process with
// `concurrency`, default options, against the Redis server the workbench
// started.
//
//   node cron.mjs --url redis://127.0.0.1:PORT/ --schedules N --every-s E --run-for-ms R
//       [--grace-ms 1000] [--zone UTC] [--concurrency 4]
//
// Schedule k fires every E seconds at second k mod E of the minute. Every
// scheduler starts at the same whole second T0 (startDate), chosen after
// timing a hundred throwaway schedulers so that creating them all (100
// upserts in flight) ends well before it; the worker starts after creation.
// Prints one JSON line, the workbench's CalendarRun: T0, the fires as
// [k, wall-clock µs], ns per created scheduler, the worker's CPU and Redis's
// (INFO cpu) over [T0, T0 + R + grace], and the growth of Redis's keys (MEMORY
// USAGE summed over them) per scheduler.

import { fork } from 'node:child_process';
import { Queue, Worker } from 'bullmq';
import { connection, counters, num, opts } from './common.mjs';

const QUEUE = 'workbench-cron';
const IN_FLIGHT = 100;

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

// ---- worker process -------------------------------------------------------

async function work(o) {
  const fires = [];
  const worker = new Worker(QUEUE, async (job) => {
    fires.push([job.data.k, nowUs()]);
  }, { connection: connection(o.url), concurrency: num(o, 'concurrency', 4) });
  worker.on('error', (e) => process.stderr.write(`bullmq cron worker: ${e}\n`));
  await worker.waitUntilReady();
  process.send({ ready: true });
  process.on('message', async (m) => {
    if (m.cpu) process.send({ cpu: process.cpuUsage() });
    if (m.stop) {
      await worker.close();
      process.send({ stopped: true, fires, cpu: process.cpuUsage() });
      process.exit(0);
    }
  });
}

// ---- driver ---------------------------------------------------------------

// What Redis's keys take: MEMORY USAGE (every element, SAMPLES 0) summed over
// every key, read with nothing else running. Unlike used_memory this moves
// only with the data: used_memory also holds client buffers, whose
// accounting lags, so on a few dozen schedulers its growth came out negative.
async function keysMemory(admin) {
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'COUNT', 1000);
    cursor = next;
    const p = admin.pipeline();
    for (const k of keys) p.memory('USAGE', k, 'SAMPLES', '0');
    for (const [err, bytes] of await p.exec()) {
      if (err) throw err;
      total += Number(bytes ?? 0);
    }
  } while (cursor !== '0');
  return total;
}

function pattern(k, every) {
  const s = k % every;
  return every === 60 ? `${s} * * * * *` : `${s}/${every} * * * * *`;
}

// Upserts schedulers `ids` (names) for schedule numbers `ks`, IN_FLIGHT at a time.
async function upsert(queue, ks, name, every, zone, startDate) {
  for (let i = 0; i < ks.length; i += IN_FLIGHT) {
    await Promise.all(ks.slice(i, i + IN_FLIGHT).map((k) => queue.upsertJobScheduler(
      name(k),
      { pattern: pattern(k, every), tz: zone, startDate },
      { name: 'tick', data: { k } },
    )));
  }
}

function ask(child, message, key) {
  return new Promise((resolve) => {
    const on = (m) => {
      if (m[key] !== undefined) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    child.send(message);
  });
}

const sleepUntil = async (ms) => {
  while (Date.now() < ms) await new Promise((r) => setTimeout(r, Math.min(1000, ms - Date.now())));
};

async function drive(o) {
  const n = num(o, 'schedules', 1000);
  const every = num(o, 'every-s', 60);
  const runFor = num(o, 'run-for-ms', 20000);
  const grace = num(o, 'grace-ms', 1000);
  const zone = o.zone || 'UTC';
  if (every < 1 || every > 60 || 60 % every !== 0) throw new Error(`--every-s wants a divisor of 60, got ${every}`);
  const admin = connection(o.url);
  const queue = new Queue(QUEUE, { connection: connection(o.url) });
  await queue.waitUntilReady();

  // The probe: what creating a scheduler costs, on schedulers an hour out.
  const probe = Array.from({ length: Math.min(100, n) }, (_, k) => k);
  let t = performance.now();
  await upsert(queue, probe, (k) => `probe-${k}`, every, zone, Date.now() + 3600000);
  const perMs = (performance.now() - t) / probe.length;
  await Promise.all(probe.map((k) => queue.removeJobScheduler(`probe-${k}`)));
  const start = Math.ceil((Date.now() + Math.max(3000, 2 * perMs * n) + 2000) / 1000) * 1000;

  const before = await keysMemory(admin);
  t = performance.now();
  // A scheduler's first run is the first instant after its startDate: a
  // millisecond before the start, so the start itself is one.
  await upsert(queue, Array.from({ length: n }, (_, k) => k), (k) => `c${k}`, every, zone, start - 1);
  const scheduleNs = ((performance.now() - t) * 1e6) / n;
  const bytes = (await keysMemory(admin) - before) / n;
  if (Date.now() > start - 500) {
    throw new Error(`creating ${n} schedulers ended ${Date.now() - start} ms after their start, beyond the lead measured on a few`);
  }

  const child = fork(process.argv[1], ['work', '--url', o.url, '--concurrency', String(num(o, 'concurrency', 4))]);
  child.on('exit', (code) => {
    if (code !== 0) {
      process.stderr.write(`cron.mjs: the worker exited with ${code}\n`);
      process.exit(1);
    }
  });
  await new Promise((resolve) => child.on('message', (m) => m.ready && resolve()));
  await sleepUntil(start);
  const cpu0 = (await ask(child, { cpu: true }, 'cpu')).cpu;
  const redis0 = counters(await admin.info('cpu')).cpu;
  await sleepUntil(start + runFor + grace);
  const redis1 = counters(await admin.info('cpu')).cpu;
  const done = await ask(child, { stop: true }, 'stopped');
  const cpu = (done.cpu.user + done.cpu.system) - (cpu0.user + cpu0.system);
  const from = start * 1000 - 1000000;
  const line = JSON.stringify({
    start_us: start * 1000,
    schedule_ns: scheduleNs,
    cpu_us: cpu,
    store_cpu_us: (redis1 - redis0) * 1e6,
    bytes,
    fires: done.fires.filter(([, us]) => us >= from),
  });
  await queue.close();
  // A pipe takes a long line in pieces: exit once all of it is written.
  process.stdout.write(`${line}\n`, () => process.exit(0));
}

const [mode, ...rest] = process.argv.slice(2);
const o = opts(mode === 'work' ? rest : process.argv.slice(2));
if (!o.url) {
  process.stderr.write('cron.mjs: --url is required\n');
  process.exit(2);
}
(mode === 'work' ? work(o) : drive(o)).catch((e) => {
  process.stderr.write(`cron.mjs: ${e.stack || e}\n`);
  process.exit(1);
});
