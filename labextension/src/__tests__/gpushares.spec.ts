import { gpuShareText, memoryCap, modeText, sharesLine } from '../gpushares';

const GiB = 2 ** 30;

describe('sharesLine', () => {
  it('says nothing when the service says nothing', () => {
    expect(sharesLine(undefined)).toBeNull();
    expect(sharesLine(null)).toBeNull();
  });

  it('names the mode and that shares are enforced', () => {
    expect(sharesLine({ mode: 'mps', enforced: true, reason: '' })).toEqual({
      mode: 'mps', state: 'enforced', text: 'GPU sharing: MPS, shares enforced'
    });
    expect(sharesLine({ mode: '', enforced: true })?.text).toBe(
      'GPU sharing: mode not said, shares enforced');
  });

  it('says GPUs declared in configuration (no device) are declared, not enforced', () => {
    expect(sharesLine({ mode: 'framework', enforced: true, declared: true })).toEqual({
      mode: 'framework', state: 'enforced', text: 'GPU sharing: framework caps, declared (no device)'
    });
  });

  it('shows an admin\'s "shares not enforced" mark with the reason', () => {
    expect(sharesLine({
      mode: 'mps', enforced: false, reason: 'MPS daemon not running', not_enforced_allowed: true
    })).toEqual({
      mode: 'mps', state: 'not-enforced',
      text: 'GPU sharing: MPS, shares not enforced (MPS daemon not running)'
    });
  });

  it('says a node takes no shares now, and why', () => {
    expect(sharesLine({
      mode: 'hami', enforced: false, reason: 'HAMi-core library absent (/l.so)',
      not_enforced_allowed: false
    })?.text).toBe('GPU sharing: HAMi-core, takes no shares now (HAMi-core library absent (/l.so))');
    expect(sharesLine({ mode: 'x', enforced: false })?.text).toBe(
      'GPU sharing: x, takes no shares now');
  });

  it('names every mode', () => {
    expect(modeText('framework')).toBe('GPU sharing: framework caps');
  });
});

describe('memoryCap and gpuShareText', () => {
  it('shows the cap exactly in binary units', () => {
    expect(memoryCap(40 * GiB)).toBe('memory cap 40 GiB');
    expect(memoryCap('42949672960')).toBe('memory cap 40 GiB');
    expect(memoryCap(200000014)).toBe('memory cap ≈ 190.73 MiB');
    expect(memoryCap(0)).toBe('');
    expect(memoryCap(undefined)).toBe('');
  });

  it('names a share with its cap, a whole GPU as whole', () => {
    expect(gpuShareText({ index: 3, share: '0.5', memory: 40 * GiB })).toBe(
      'GPU 3: 0.5, memory cap 40 GiB');
    expect(gpuShareText({ index: 3, share: '0.25' })).toBe('GPU 3: 0.25');
    expect(gpuShareText({ index: 0, share: '1', memory: 80 * GiB })).toBe('GPU 0: whole');
  });
});
