import { expect, test } from '@jupyterlab/galata';

/**
 * Don't load JupyterLab webpage before running the tests.
 * This is required to ensure we capture all log messages.
 *
 * Galata's user mock answers every URL matching /.*\/api\/me.*\/ (so
 * hubgrid/api/me too): let the real server answer instead.
 */
test.use({ autoGoto: false, mockUser: false });

test('should emit an activation console message', async ({ page }) => {
  const logs: string[] = [];

  page.on('console', message => {
    logs.push(message.text());
  });

  await page.goto();

  expect(
    logs.filter(s => s === 'JupyterLab extension jupyterlab-hubgrid is activated!')
  ).toHaveLength(1);
});

test('the Summary panel shows why it cannot reach hubgrid, as text', async ({
  page
}) => {
  await page.goto();
  await page.getByRole('tab', { name: 'hubgrid: Summary' }).click();
  const panel = page.locator('#jp-hubgrid-summary');
  await expect(panel.getByRole('alert')).toContainText(
    'HUBGRID_API_URL (c.HubgridLab.api_url) is not set'
  );
});
