// cron-parser's package entry also loads its crontab-file reader, which needs node:fs;
// src/monitors/schedule.ts imports the expression parser's own module instead (Web APIs
// only, so the Workers edition bundles it). Its types are the package's.
declare module 'cron-parser/dist/CronExpressionParser.js' {
  export { CronExpressionParser } from 'cron-parser';
}
