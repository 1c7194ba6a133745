import { AdminPageList, IAdminPageItem } from '../admin/pages';

function list(): { pages: AdminPageList; shown: IAdminPageItem[][] } {
  const shown: IAdminPageItem[][] = [];
  return { pages: new AdminPageList(items => shown.push(items)), shown };
}

describe('the admin menu pages', () => {
  it('shows nothing until the caller is known to be an admin (a plain user never opens it)', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.add({ command: 'hubgrid:admin-queue', rank: 50 });
    expect(shown).toEqual([]);
    expect(pages.isOpen).toBe(false);
  });

  it('shows every page added before opening at once, by rank', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-audit', rank: 80 });
    pages.add({ command: 'hubgrid:admin-groups', rank: 40 });
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.open();
    expect(shown).toEqual([
      [
        { command: 'hubgrid:admin-users', rank: 10 },
        { command: 'hubgrid:admin-groups', rank: 40 },
        { command: 'hubgrid:admin-audit', rank: 80 }
      ]
    ]);
  });

  it('shows a page added after opening right away, and each page once', () => {
    const { pages, shown } = list();
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    pages.open();
    pages.open();
    pages.add({ command: 'hubgrid:admin-images', rank: 70 });
    pages.add({ command: 'hubgrid:admin-users', rank: 10 });
    expect(shown).toEqual([[{ command: 'hubgrid:admin-users', rank: 10 }], [{ command: 'hubgrid:admin-images', rank: 70 }]]);
  });
});
