// Request bodies read straight from Node's IncomingMessage (AppDeps.readRequestBody).
// Asking @hono/node-server for `request.body` makes it build an undici Request, an
// AbortSignal and a Web ReadableStream for every request; on the ingest path that
// costs more CPU than parsing and storing the event (measured in a CPU profile).
import type { IncomingMessage } from 'node:http';
import { ClientAbortedError, PayloadTooLargeError } from '../../errors.js';

/** The IncomingMessage @hono/node-server passes as the app's env (`env.incoming`). */
export function incomingOf(env: unknown): IncomingMessage | undefined {
  return (env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

/** The whole body, or PayloadTooLargeError as soon as more than `limit` bytes arrived. */
export function readIncomingBody(incoming: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > limit) {
        cleanup();
        // Whatever else the client sends is read and thrown away, never buffered.
        incoming.resume();
        reject(new PayloadTooLargeError(`request body exceeds the limit of ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total));
    };
    // An error or a close before the end is the client going away mid-body.
    const onError = (err: Error) => {
      cleanup();
      reject(new ClientAbortedError({ cause: err }));
    };
    const onClose = () => {
      if (incoming.readableEnded) return onEnd();
      cleanup();
      reject(new ClientAbortedError());
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/** AppDeps.readRequestBody for @hono/node-server: its `env.incoming` is the IncomingMessage. */
export function readNodeRequestBody(_request: Request, env: unknown, limit: number): Promise<Uint8Array> | undefined {
  const incoming = incomingOf(env);
  // Already consumed (e.g. by a middleware that read the Web body): use the Web stream.
  if (!incoming || incoming.readableDidRead) return undefined;
  return readIncomingBody(incoming, limit);
}
