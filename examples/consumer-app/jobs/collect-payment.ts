/**
 * The `collect-payment` worker's Lambda entry: a workflow of durable steps, a signal wait and a
 * sleep. Every run replays from the top; a recorded step returns its recorded result, so each
 * email is sent once however often the job resumes.
 */
import { defineJob } from 'orrery-jobs/runtime';
import { collectPaymentJob } from './catalog.ts';

export const collectPayment = defineJob(collectPaymentJob, async ({ invoiceNumber, email, totalCents }, ctx) => {
  // A real app calls its mail service here, passing ctx.signal on; the step records what it returns.
  const sendEmail = (subject: string) => {
    ctx.log.info('email sent', { to: email, subject });
    return { to: email, subject };
  };

  await ctx.step('send-invoice', () => sendEmail(`Invoice ${invoiceNumber}`));
  // { amountCents, reference } from the spec's `paid` schema, or null after 7 days without it
  const paid = await ctx.waitForSignal('paid', { timeout: '7d' });
  if (paid) return { invoiceNumber, status: 'paid' as const, reference: paid.reference };

  await ctx.step('send-reminder', () => sendEmail(`Reminder: invoice ${invoiceNumber}`));
  await ctx.sleep('grace-period', '3d'); // the job holds no Lambda while it sleeps
  ctx.log.warn('invoice overdue', { invoiceNumber, totalCents });
  return { invoiceNumber, status: 'overdue' as const };
});

export const handler = collectPayment.handler;
