// Fallback server entry for the benchmark when dist/cli/main.js is not built yet
// (or with --entry edition): the node edition from dist, configured from the
// environment exactly like `faultline serve`, stopping cleanly on SIGTERM/SIGINT
// so `node --cpu-prof` writes its profile.
import { loadConfig } from '../dist/config.js';
import { buildNodeDeps, startServer } from '../dist/editions/node/server.js';

const config = loadConfig(process.env);
const deps = await buildNodeDeps(config);
const server = await startServer(deps);
process.stdout.write(`listening ${server.url}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
