@echo off
rem Starts the ghola MCP server for the Claude Code plugin on Windows, where Claude Code spawns an MCP server
rem without a shell and resolves the extensionless `bin/ghola-mcp` of .mcp.json to this file through PATHEXT.
rem The same order as bin/ghola-mcp (the POSIX script), never compiling anything:
rem   1. %GHOLA_BIN%;
rem   2. the binary cached for this plugin version: %CLAUDE_PLUGIN_DATA%\bin\<version>\ghola.exe (else
rem      %LOCALAPPDATA%\ghola\bin\<version>\ghola.exe);
rem   3. a checkout's target\release\ghola.exe;
rem   4. a ghola.exe on PATH whose `ghola --version` is this plugin's version;
rem   5. otherwise PowerShell (part of Windows) downloads ghola-x86_64-pc-windows-msvc.zip and its .sha256 from
rem      %GHOLA_RELEASE_URL% (default: the GitHub release v<version> of the repository named in plugin.json),
rem      checks the sha256, unpacks into a temporary folder beside the cache and moves ghola.exe into place.
rem Everything it says goes to stderr: stdout belongs to the MCP protocol.
rem `ghola-mcp hook EVENT` runs `ghola hook EVENT` from places 1-4 and never downloads: without a binary yet it
rem does nothing.
setlocal EnableExtensions DisableDelayedExpansion

set "GHOLA_MODE=serve"
set "GHOLA_EVENT="
if /I "%~1"=="hook" (
  set "GHOLA_MODE=hook"
  set "GHOLA_EVENT=%~2"
)

set "ROOT=%CLAUDE_PLUGIN_ROOT%"
if not defined ROOT set "ROOT=%~dp0.."
set "MANIFEST=%ROOT%\.claude-plugin\plugin.json"
set "VERSION="
set "REPOSITORY="
for /f "usebackq tokens=1,* delims=:" %%a in ("%MANIFEST%") do call :field "%%a" "%%b"
if not defined VERSION (
  echo ghola: cannot read the plugin version from %MANIFEST%; reinstall the plugin 1>&2
  exit /b 1
)

rem 1. An explicit binary.
if defined GHOLA_BIN (
  if not exist "%GHOLA_BIN%" (
    echo ghola: GHOLA_BIN=%GHOLA_BIN% is not a file; fix or unset it 1>&2
    exit /b 1
  )
  goto :run_explicit
)

rem 2. The binary cached for this version.
set "DATA=%CLAUDE_PLUGIN_DATA%"
if not defined DATA set "DATA=%LOCALAPPDATA%\ghola"
if "%DATA%"=="\ghola" set "DATA=%USERPROFILE%\.cache\ghola"
set "CACHE=%DATA%\bin\%VERSION%"
if exist "%CACHE%\ghola.exe" (
  set "GHOLA_EXE=%CACHE%\ghola.exe"
  goto :run
)

rem 3. A checkout's build.
if exist "%ROOT%\target\release\ghola.exe" (
  set "GHOLA_EXE=%ROOT%\target\release\ghola.exe"
  goto :run
)

rem 4. A ghola on PATH of the same version.
set "FOUND="
for /f "delims=" %%p in ('where ghola.exe 2^>nul') do if not defined FOUND set "FOUND=%%p"
if defined FOUND (
  for /f "delims=" %%v in ('"%FOUND%" --version 2^>nul') do if "%%v"=="ghola %VERSION%" (
    set "GHOLA_EXE=%FOUND%"
    goto :run
  )
)

rem A hook never downloads.
if "%GHOLA_MODE%"=="hook" exit /b 0

rem 5. Download the release artifact.
set "BASE=%GHOLA_RELEASE_URL%"
if not defined BASE (
  if not defined REPOSITORY (
    echo ghola: plugin.json names no repository to download from; set GHOLA_RELEASE_URL, or build ghola from source and set GHOLA_BIN 1>&2
    exit /b 1
  )
  set "BASE=%REPOSITORY%/releases/download/v%VERSION%"
)
if "%PROCESSOR_ARCHITECTURE%"=="ARM64" (
  echo ghola: no release is built for Windows on ARM; build ghola from source ^(https://rustup.rs, then cargo install --locked --path . in a checkout at tag v%VERSION%^) and set GHOLA_BIN 1>&2
  exit /b 1
)
set "TIMEOUT=%GHOLA_DOWNLOAD_TIMEOUT%"
if not defined TIMEOUT set "TIMEOUT=25"
echo ghola: first start of ghola %VERSION%: downloading ghola-x86_64-pc-windows-msvc.zip from %BASE% (once) 1>&2
powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command ^
  "$ErrorActionPreference = 'Stop';" ^
  "$base = $env:BASE.TrimEnd('/'); $cache = $env:CACHE; $name = 'ghola-x86_64-pc-windows-msvc.zip';" ^
  "New-Item -ItemType Directory -Force -Path $cache | Out-Null;" ^
  "$tmp = Join-Path $cache ('.download.' + [guid]::NewGuid().ToString('N'));" ^
  "New-Item -ItemType Directory -Path $tmp | Out-Null;" ^
  "try {" ^
  "  [Net.ServicePointManager]::SecurityProtocol = [Net.SecurityProtocolType]::Tls12;" ^
  "  Invoke-WebRequest -UseBasicParsing -TimeoutSec ([int]$env:TIMEOUT) -Uri ($base + '/' + $name) -OutFile (Join-Path $tmp $name);" ^
  "  Invoke-WebRequest -UseBasicParsing -TimeoutSec ([int]$env:TIMEOUT) -Uri ($base + '/' + $name + '.sha256') -OutFile (Join-Path $tmp ($name + '.sha256'));" ^
  "  $want = ((Get-Content -Raw (Join-Path $tmp ($name + '.sha256'))).Trim() -split '\s+')[0].ToLower();" ^
  "  $have = (Get-FileHash -Algorithm SHA256 (Join-Path $tmp $name)).Hash.ToLower();" ^
  "  if ($want -ne $have) { [Console]::Error.WriteLine(\"ghola: refusing $name from ${base}: its sha256 is $have but the release says $want; the download was damaged or tampered with and nothing was installed\"); exit 3 }" ^
  "  tar.exe -xf (Join-Path $tmp $name) -C $tmp; if ($LASTEXITCODE -ne 0) { Expand-Archive -Force (Join-Path $tmp $name) $tmp }" ^
  "  $exe = Join-Path $tmp 'ghola-x86_64-pc-windows-msvc\ghola.exe';" ^
  "  if (-not (Test-Path $exe)) { [Console]::Error.WriteLine(\"ghola: $name holds no ghola-x86_64-pc-windows-msvc\ghola.exe\"); exit 4 }" ^
  "  Move-Item -Force $exe (Join-Path $cache 'ghola.exe');" ^
  "} catch { [Console]::Error.WriteLine(\"ghola: could not download ghola from ${base}: $($_.Exception.Message); check the network and restart Claude Code, set GHOLA_RELEASE_URL to a mirror, or build from source and set GHOLA_BIN\"); exit 2 }" ^
  "finally { Remove-Item -Recurse -Force $tmp -ErrorAction SilentlyContinue }" 1>&2
if errorlevel 1 exit /b 1
if not exist "%CACHE%\ghola.exe" (
  echo ghola: the download did not leave %CACHE%\ghola.exe 1>&2
  exit /b 1
)
echo ghola: installed %CACHE%\ghola.exe 1>&2
set "GHOLA_EXE=%CACHE%\ghola.exe"
goto :run

:run_explicit
set "GHOLA_EXE=%GHOLA_BIN%"
:run
if "%GHOLA_MODE%"=="hook" (
  "%GHOLA_EXE%" hook %GHOLA_EVENT%
) else (
  "%GHOLA_EXE%" serve
)
exit /b %ERRORLEVEL%

rem Reads one `"key": "value",` line of plugin.json into VERSION or REPOSITORY.
:field
set "KEY=%~1"
set "KEY=%KEY: =%"
set "KEY=%KEY:"=%"
set "VAL=%~2"
if "%KEY%"=="version" for %%v in (%VAL%) do set "VERSION=%%~v"
if "%KEY%"=="repository" for %%v in (%VAL%) do if not defined REPOSITORY set "REPOSITORY=%%~v"
exit /b 0
