"""Virtual folders: storage hosts, folders with their quotas, invitations
and shares, which folders a session mounts, and the files inside a folder
(safe paths, the tree, staged uploads with quota reservations, tus)."""
