// `tandem serve` with its default processes (router + 1 prefill + 1
// decode worker): oracle outputs, a SIGKILLed child restarted (the router on
// its ports), and SIGINT stopping everything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  spawnTandem, inferenceClient, oracle, oracleRequest, scrape, sum, waitFor, childrenOf, cmdline, alive,
} from './cluster.mjs';

const READY = /^tandem serve: model '([^']+)' \(context (\d+), 1 prefill \+ 1 decode worker processes\) on http:\/\/([^:]+):(\d+) .*and grpc [^ ]+:(\d+)/;

function children(serve) {
  const out = {};
  for (const pid of childrenOf(serve.pid)) {
    const cmd = cmdline(pid);
    if (/ router /.test(cmd)) out.router = pid;
    else if (/--role prefill/.test(cmd)) out.prefill = pid;
    else if (/--role decode/.test(cmd)) out.decode = pid;
  }
  return out;
}

// healthy `role` workers on the router; 0 while the router does not serve.
async function healthyWorkers(router, role) {
  if ((await fetch(router.healthUrl)).status !== 200) return 0;
  return sum(await scrape(router.metricsUrl), 'tandem:router_workers', { role, state: 'healthy' });
}

// the value of NAME in the environment of process `pid` (undefined if unset).
function environOf(pid, name) {
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    if (entry.startsWith(`${name}=`)) return entry.slice(name.length + 1);
  }
  return undefined;
}

async function oracleOk(client, cases) {
  for (const c of cases) {
    const r = await client.generate(oracleRequest(c));
    assert.deepEqual(r.ids, c.completion_ids, c.prompt);
  }
}

test('tandem serve supervises its processes: restarts a killed one, SIGINT stops all', async () => {
  const serve = await spawnTandem('serve', ['serve', '--http-port', '0', '--grpc-port', '0', '--threads', '2',
    '--max-local-prefill-tokens', '3'], READY);
  const router = {
    grpcAddress: `${serve.match[3]}:${serve.match[5]}`,
    metricsUrl: `http://${serve.match[3]}:${serve.match[4]}/metrics`,
    healthUrl: `http://${serve.match[3]}:${serve.match[4]}/health`,
  };
  let client = inferenceClient(router);
  try {
    assert.equal(serve.match[1], 'stories260K');
    await waitFor(async () => await healthyWorkers(router, 'prefill') === 1, 20000, 'the prefill worker');
    await oracleOk(client, oracle.cases);
    const first = children(serve);
    assert.ok(first.router && first.prefill && first.decode, JSON.stringify(first));
    // one random cluster secret, handed to every child in its environment
    // and on no command line (ps shows those).
    const secrets = [first.router, first.prefill, first.decode].map((pid) => environOf(pid, 'TANDEM_CLUSTER_SECRET'));
    assert.match(secrets[0] ?? '', /^[0-9a-f]{64}$/);
    assert.deepEqual(secrets, [secrets[0], secrets[0], secrets[0]]);
    for (const pid of [serve.pid, first.router, first.prefill, first.decode]) {
      assert.ok(!cmdline(pid).includes(secrets[0]), `the secret is on the command line of ${pid}`);
    }

    // the decode worker dies: serve starts another, which registers.
    const restarted = serve.waitForLine(/^\[supervisor\] decode-0 restarted/);
    process.kill(first.decode, 'SIGKILL');
    await restarted;
    // the killed worker may still count as healthy until the router's polls
    // fail: the healthy one is the new one only once the old one was seen
    // unhealthy (the new worker listens on another port, so the old entry
    // stays, unhealthy, until the router drops it).
    let oldSeenUnhealthy = false;
    await waitFor(async () => {
      const m = await scrape(router.metricsUrl);
      if (sum(m, 'tandem:router_workers', { role: 'decode', state: 'unhealthy' }) >= 1) oldSeenUnhealthy = true;
      return oldSeenUnhealthy && children(serve).decode !== undefined && children(serve).decode !== first.decode &&
        await healthyWorkers(router, 'decode') === 1;
    }, 20000, 'a new healthy decode worker');
    await oracleOk(client, oracle.cases.slice(0, 3));

    // the router dies: it comes back on the same ports and the workers rejoin.
    const routerBack = serve.waitForLine(/^\[supervisor\] router restarted/);
    process.kill(first.router, 'SIGKILL');
    await routerBack;
    await waitFor(async () => await healthyWorkers(router, 'decode') === 1 &&
      await healthyWorkers(router, 'prefill') === 1, 20000, 'the workers on the restarted router');
    client.close();
    client = inferenceClient(router);
    await oracleOk(client, oracle.cases.slice(3, 6));

    // SIGINT: everything exits, serve with 0.
    const last = Object.values(children(serve));
    assert.equal(last.length, 3);
    serve.kill('SIGINT');
    const { code } = await serve.exited;
    assert.equal(code, 0, serve.log().slice(-3000));
    for (const pid of [...last, ...Object.values(first)]) assert.ok(!alive(pid), `pid ${pid} is still running`);
    assert.match(serve.log(), /tandem serve: stopped/);
  } finally {
    client.close();
    serve.kill('SIGKILL');
    await serve.exited;
  }
});

test('tandem serve fails fast when a child cannot start', async () => {
  await assert.rejects(
    spawnTandem('serve-bad', ['serve', '--http-port', '0', '--grpc-port', '0', '--model', '/nonexistent/model.gguf'], READY),
    /exited \(code 1/);
});
