// What retention runs besides the store's own tables, from the domains that own the
// rows: storage budgets (src/privacy/usage.ts) and expired upload chunks
// (src/uploads/chunks.ts). `serve`, the Worker's cron and `faultline retention` pass it
// to the store's retention (src/store/retention.ts), which imports no domain.
import { storageBudgetPlan } from '../privacy/usage.js';
import type { RetentionDomains } from '../store/retention.js';
import { deleteExpiredChunks } from '../uploads/chunks.js';

export const RETENTION_DOMAINS: RetentionDomains = { sweepers: [deleteExpiredChunks], budgetPlan: storageBudgetPlan };
