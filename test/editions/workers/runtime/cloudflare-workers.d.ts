// The one thing these tests take from the Workers runtime's `cloudflare:workers`
// module (typed in full by @cloudflare/workers-types, which is not installed).
declare module 'cloudflare:workers' {
  export const env: Record<string, unknown>;
}

// Fixtures imported as text by Vite (`?raw`): the Workers runtime has no file system.
declare module '*?raw' {
  const text: string;
  export default text;
}

// The queue helpers of @cloudflare/vitest-pool-workers' `cloudflare:test` these tests use.
declare module 'cloudflare:test' {
  interface TestMessageBatch {
    readonly queue: string;
    readonly messages: readonly {
      readonly id: string;
      readonly body: unknown;
      readonly attempts: number;
      ack(): void;
      retry(options?: { delaySeconds?: number }): void;
    }[];
  }
  interface TestExecutionContext {
    waitUntil(promise: Promise<unknown>): void;
    passThroughOnException(): void;
  }
  export function createExecutionContext(): TestExecutionContext;
  export function createMessageBatch(
    queueName: string,
    messages: { id: string; timestamp: Date; attempts: number; body: unknown }[],
  ): TestMessageBatch;
  export function getQueueResult(
    batch: TestMessageBatch,
    ctx: TestExecutionContext,
  ): Promise<{
    outcome: string;
    ackAll: boolean;
    retryBatch: { retry: boolean };
    explicitAcks: string[];
    retryMessages: { msgId: string }[];
  }>;
}
