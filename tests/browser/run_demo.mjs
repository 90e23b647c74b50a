// Drives Debian's headless Chromium (through playwright-core) through a notebook served by Jupyter Notebook:
// opens it, checks the kernel is xsot, runs every cell from the Cell menu, waits for the kernel to finish, then
// measures what rendered (the %%sot report's break table, bytecode diff and SVG graph, errors) and saves
// screenshots. Prints one JSON object for tests/browser/test_browser.py to check.
//
// usage: node run_demo.mjs URL SCREENSHOT_DIR   (env BROWSER_NODE_MODULES: where playwright-core is installed,
//        CHROMIUM: the browser, default /usr/bin/chromium)
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.env.BROWSER_NODE_MODULES || '.', 'x.js'));
const { chromium } = require('playwright-core');

const [url, shots] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const result = { console_errors: [] };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => result.console_errors.push(String(e)));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(
    () => window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded && Jupyter.notebook.kernel &&
      Jupyter.notebook.kernel.is_connected(),
    null, { timeout: 60000 });
  result.kernel = await page.textContent('.kernel_indicator_name');
  await page.screenshot({ path: path.join(shots, 'demo-opened.png') });

  // Run all, as a user does: Cell > Run All.
  await page.click('#celllink');
  await page.click('#run_all_cells > a');
  await page.waitForFunction(() => {
    const cells = Jupyter.notebook.get_cells().filter((c) => c.cell_type === 'code');
    return !Jupyter.notebook.kernel_busy && cells.every((c) => typeof c.input_prompt_number === 'number');
  }, null, { timeout: 240000, polling: 250 });
  await page.waitForTimeout(500);  // last outputs laid out

  result.code_cells = await page.$$eval('.cell.code_cell', (xs) => xs.length);
  result.executed = await page.evaluate(() => Jupyter.notebook.get_cells()
    .filter((c) => c.cell_type === 'code' && typeof c.input_prompt_number === 'number').length);
  result.errors = await page.$$eval('.output_error', (xs) => xs.map((x) => x.innerText.split('\n')
    .filter((l) => /Error/.test(l)).pop() || ''));
  result.reports = await page.$$eval('.sot-report', (xs) => xs.length);
  const visible = (sel) => page.$$eval(sel, (xs) => xs.filter((x) => {
    const r = x.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }).length);
  result.break_tables = await visible('table.sot-breaks');
  result.break_rows = await page.$$eval('table.sot-breaks tr', (xs) => xs.length);
  result.highlighted_lines = await page.$$eval('.sot-line-hit', (xs) => xs.map((x) => x.innerText.trim()));
  result.graph_svgs = await visible('.sot-graph svg');
  result.graph_svg_texts = await page.$$eval('.sot-graph svg text', (xs) => xs.map((x) => x.textContent));
  result.bytecode_tables = await page.$$eval('table.sot-bytecode', (xs) => xs.length);

  // The break table of the describe() report, then its graph and a bytecode diff, opened.
  const breaks = page.locator('table.sot-breaks').first();
  await breaks.scrollIntoViewIfNeeded();
  await page.locator('.sot-report', { has: breaks }).first().screenshot({ path: path.join(shots, 'demo-breaks.png') });
  const graph = page.locator('.sot-graph').first();
  await graph.scrollIntoViewIfNeeded();
  await graph.screenshot({ path: path.join(shots, 'demo-graph.png') });
  const fold = page.locator('details:has(table.sot-bytecode)').nth(1);
  await fold.locator('summary').first().click();
  result.bytecode_visible = await visible('table.sot-bytecode');
  result.new_rows_visible = await visible('table.sot-bytecode tr.sot-new');
  await fold.scrollIntoViewIfNeeded();
  await fold.screenshot({ path: path.join(shots, 'demo-bytecode.png') });
  // The notebook scrolls inside its own container: grow the window to its height for the whole-notebook shot.
  const height = await page.$eval('#notebook-container', (x) => x.scrollHeight + 160);
  await page.setViewportSize({ width: 1280, height: Math.min(height, 16000) });
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(shots, 'demo-full.png') });
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
