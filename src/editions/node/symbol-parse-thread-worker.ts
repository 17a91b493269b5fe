// The symbol parse thread's program (see symbol-parse-thread.ts): runs a kind's `parse`
// for each request and transfers the result's typed arrays back.
import { parentPort } from 'node:worker_threads';
import { defaultSymbolKinds } from '../../symbols/default-kinds.js';
import { handlerOf } from '../../symbols/kinds.js';
import { transferablesOf, type SymbolParseReply, type SymbolParseRequest } from './symbol-parse-thread.js';

const port = parentPort!;
// The server's SymbolService has the same list (server.ts): the kinds whose `parse` runs here.
const kinds = defaultSymbolKinds();

port.on('message', (request: SymbolParseRequest) => {
  let reply: SymbolParseReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const handler = handlerOf(kinds, request.kind);
    if (!handler?.parse) throw new Error(`${request.kind} files are not parsed on this thread`);
    const data = handler.parse(request.file, request.bytes, request.index);
    reply = { id: request.id, data };
    transfer = transferablesOf(data);
  } catch (err) {
    reply = { id: request.id, error: { message: (err as Error).message, name: (err as Error).name } };
  }
  port.postMessage(reply, transfer);
});
