/**
 * Send quotas count in fixed minutes (aligned to the clock). A test that
 * fills a budget and expects the next send refused waits, when a minute is
 * about to turn, for the next one to begin — else its sends could straddle two
 * windows and the refusal never come.
 */
export async function startOfQuotaWindow(needMs = 15_000): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (60_000 - intoMinute < needMs) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 50));
}
