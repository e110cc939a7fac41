/**
 * The demo's fake payment provider. It stands for an external system: its ledger
 * lives in its own tables (`demo_provider_calls`, `demo_provider_refunds`) of the
 * demo's SQLite file, written through its own connection and never inside a store
 * transaction, so the task and the provider can disagree after a crash exactly
 * as a real task and a real gateway can (“Agent State Machine Design” §5).
 *
 * Like a naive gateway it does not deduplicate: every successful call books a
 * new refund. One row in the ledger for a key therefore shows that the refund
 * ran exactly once.
 */
import Database from 'better-sqlite3';

/** What a successful refund returns (and what the idempotent step stores). */
export interface RefundReceipt {
  refundId: string;
  idempotencyKey: string;
  orderId: string;
  amountCents: number;
  createdAt: number;
}

/** One call the provider received. */
export interface ProviderCall {
  at: number;
  idempotencyKey: string;
  status: number;
  refundId: string | null;
}

/** The provider answered with a retryable HTTP status (503). */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
  readonly status = 503;
  constructor() {
    super('payment provider: 503 Service Unavailable');
  }
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS demo_provider_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL,
    status INTEGER NOT NULL,
    refund_id TEXT
  ) STRICT;
  CREATE TABLE IF NOT EXISTS demo_provider_refunds (
    refund_id TEXT PRIMARY KEY NOT NULL,
    idempotency_key TEXT NOT NULL,
    order_id TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX IF NOT EXISTS demo_provider_refunds_key ON demo_provider_refunds (idempotency_key);
`;

const RECEIPT_COLUMNS = `refund_id AS refundId, idempotency_key AS idempotencyKey,
  order_id AS orderId, amount_cents AS amountCents, created_at AS createdAt`;

/** A payment provider whose first call per idempotency key fails with a transient 503. */
export class PaymentProvider {
  private readonly db: Database.Database;

  /** Opens (creating if needed) the provider's tables in `file`. */
  constructor(file: string) {
    this.db = new Database(file, { timeout: 5000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
  }

  /**
   * Books a refund. The first call for a key answers 503 (the gateway is
   * overloaded); later calls succeed and each books a new refund: this provider
   * trusts its callers not to repeat themselves.
   */
  refund(request: { idempotencyKey: string; orderId: string; amountCents: number }): RefundReceipt {
    const book = this.db.transaction((now: number): RefundReceipt | null => {
      const { n } = this.db
        .prepare('SELECT COUNT(*) AS n FROM demo_provider_calls WHERE idempotency_key = ?')
        .get(request.idempotencyKey) as { n: number };
      if (n === 0) {
        this.db
          .prepare(
            'INSERT INTO demo_provider_calls (at, idempotency_key, status, refund_id) VALUES (?, ?, 503, NULL)',
          )
          .run(now, request.idempotencyKey);
        return null;
      }
      const { booked } = this.db
        .prepare('SELECT COUNT(*) AS booked FROM demo_provider_refunds')
        .get() as { booked: number };
      const receipt: RefundReceipt = {
        refundId: `re_${String(booked + 1).padStart(4, '0')}`,
        idempotencyKey: request.idempotencyKey,
        orderId: request.orderId,
        amountCents: request.amountCents,
        createdAt: now,
      };
      this.db
        .prepare(
          'INSERT INTO demo_provider_calls (at, idempotency_key, status, refund_id) VALUES (?, ?, 200, ?)',
        )
        .run(now, request.idempotencyKey, receipt.refundId);
      this.db
        .prepare(
          `INSERT INTO demo_provider_refunds (refund_id, idempotency_key, order_id, amount_cents, created_at)
           VALUES (?, ?, ?, ?, ?)`,
        )
        .run(
          receipt.refundId,
          receipt.idempotencyKey,
          receipt.orderId,
          receipt.amountCents,
          receipt.createdAt,
        );
      return receipt;
    });
    const receipt = book.immediate(Date.now());
    // Thrown outside the transaction so the 503 is recorded, as the real gateway would log it.
    if (receipt === null) throw new ProviderUnavailableError();
    return receipt;
  }

  /** The refund booked under a key, if any: what a reconcile hook asks after a crash. */
  findRefund(idempotencyKey: string): RefundReceipt | undefined {
    return this.db
      .prepare(
        `SELECT ${RECEIPT_COLUMNS} FROM demo_provider_refunds WHERE idempotency_key = ? ORDER BY created_at LIMIT 1`,
      )
      .get(idempotencyKey) as RefundReceipt | undefined;
  }

  /** Every refund booked under a key (more than one would be a duplicate refund). */
  refundsFor(idempotencyKey: string): RefundReceipt[] {
    return this.db
      .prepare(
        `SELECT ${RECEIPT_COLUMNS} FROM demo_provider_refunds WHERE idempotency_key = ? ORDER BY created_at`,
      )
      .all(idempotencyKey) as RefundReceipt[];
  }

  /** Every call received for a key, oldest first. */
  callsFor(idempotencyKey: string): ProviderCall[] {
    return this.db
      .prepare(
        `SELECT at, idempotency_key AS idempotencyKey, status, refund_id AS refundId
         FROM demo_provider_calls WHERE idempotency_key = ? ORDER BY id`,
      )
      .all(idempotencyKey) as ProviderCall[];
  }

  close(): void {
    this.db.close();
  }
}
