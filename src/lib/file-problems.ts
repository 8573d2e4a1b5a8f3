/** What the file system says when the operator must fix a path before it can be used, in words. */
export const FILE_PROBLEMS: Readonly<Record<string, string>> = {
  ENOTDIR: 'a part of its path is a file, not a folder',
  // mkdir of a folder whose name a file already has.
  EEXIST: 'a part of its path is a file, not a folder',
  EACCES: "the service's user may not write there",
  EPERM: "the service's user may not write there",
  EROFS: 'it is on a read-only file system',
  ENOSPC: 'no space is left on its device',
  EISDIR: 'a folder stands where its file should be',
};
