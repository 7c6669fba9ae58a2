package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memberIDFile pins a data directory to the member id it was first served with: raft
// state written as one member must never be served as another (it would vote twice).
const memberIDFile = "member-id"

// pinMemberID records id in dir on first use and refuses a different id afterwards.
func pinMemberID(dir string, id uint64) error {
	path := filepath.Join(dir, memberIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		got, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			return fmt.Errorf("%s holds %q, not a member id", path, b)
		}
		if got != id {
			return fmt.Errorf("data directory %s belongs to member %d, not %d (-id): start it with -id %d, or use another directory", dir, got, id, got)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return writeDurably(dir, memberIDFile, []byte(strconv.FormatUint(id, 10)+"\n"))
}

// writeDurably writes name in dir through a synced temporary file, a rename and a synced
// directory.
func writeDurably(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
