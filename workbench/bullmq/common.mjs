// What the BullMQ harnesses share: the command line, Redis connections and
// the counters read from Redis's INFO.

import IORedis from 'ioredis';

export function opts(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) o[argv[i].slice(2)] = argv[++i];
  }
  return o;
}

export function num(o, k, d) {
  if (o[k] === undefined) return d;
  const v = Number(o[k]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} wants a number, got ${o[k]}`);
  return v;
}

export function connection(url) {
  // BullMQ requires maxRetriesPerRequest: null on a Worker's connection.
  return new IORedis(url, { maxRetriesPerRequest: null });
}

// Redis's command counts and CPU seconds (user + sys) from INFO text.
export function counters(infoText) {
  const calls = {};
  let cpu = 0;
  for (const line of infoText.split(/\r?\n/)) {
    let m = line.match(/^cmdstat_([^:]+):calls=(\d+)/);
    if (m) calls[m[1]] = Number(m[2]);
    m = line.match(/^used_cpu_(sys|user):([\d.]+)/);
    if (m) cpu += Number(m[2]);
  }
  return { calls, cpu };
}
