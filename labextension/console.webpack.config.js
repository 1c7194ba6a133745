/**
 * The hubgrid console's bundle: src/console.ts, compiled by tsc
 * into lib/, with the styles it needs outside JupyterLab (Lumino's, the
 * ui-components' and apputils' ones, JupyterLab's light theme variables and
 * the extension's own), into ../quota_service/console_static/, which the
 * hubgrid service serves at /services/hubgrid/console/static/.
 *
 *   npx webpack --config console.webpack.config.js   (after tsc: scripts/install.sh does)
 *
 * The light theme's variables come from the JupyterLab installed in the
 * Python environment that builds (`jupyter labextension build` needs it
 * too): $HUBGRID_LAB_THEME_CSS names another file.
 */
const path = require('path');
const { execFileSync } = require('child_process');

function themeCss() {
  if (process.env.HUBGRID_LAB_THEME_CSS) {
    return process.env.HUBGRID_LAB_THEME_CSS;
  }
  const prefix = execFileSync('python', ['-c', 'import sys; print(sys.prefix)']).toString().trim();
  return path.join(prefix, 'share', 'jupyter', 'lab', 'themes', '@jupyterlab', 'theme-light-extension', 'index.css');
}

module.exports = {
  mode: 'production',
  entry: {
    console: [
      themeCss(),
      require.resolve('@jupyterlab/apputils/style/index.css'),
      path.resolve(__dirname, 'style', 'index.css'),
      path.resolve(__dirname, 'style', 'console.css'),
      path.resolve(__dirname, 'lib', 'console.js')
    ]
  },
  output: {
    path: path.resolve(__dirname, '..', 'quota_service', 'console_static'),
    filename: '[name].js',
    chunkFilename: '[name].[contenthash].js',
    clean: true
  },
  devtool: false,
  performance: { hints: false },
  module: {
    rules: [
      { test: /\.raw\.css$/, type: 'asset/source' },
      { test: /(?<!\.raw)\.css$/, use: [require.resolve('style-loader'), require.resolve('css-loader')] },
      { test: /\.(txt|md)$/, type: 'asset/source' },
      { test: /\.(jpg|png|gif|woff2?|ttf|eot)$/, type: 'asset/resource' },
      { test: /\.svg$/, issuer: /\.css$/, type: 'asset/inline' },
      { test: /\.svg$/, issuer: /\.js$/, type: 'asset/source' },
      { test: /\.m?js$/, resolve: { fullySpecified: false } }
    ]
  },
  resolve: { fallback: { path: false, fs: false, crypto: false, url: false, util: false, buffer: false, process: false } }
};
