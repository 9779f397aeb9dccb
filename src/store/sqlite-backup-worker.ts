/**
 * The thread that copies an SQLite database for `catalogue backup` (see sqlite-backup.ts): VACUUM
 * INTO runs as one long call, so it runs here while the main thread draws the progress.
 */
import { workerData } from 'node:worker_threads'
import { type BackupWorkerData, copySqlite } from './sqlite-backup-copy'

declare const self: Worker

copySqlite(workerData as BackupWorkerData, (message) => self.postMessage(message))
