package main

import (
	"database/sql"
	"log"
	"net/http"
	"os"

	_ "github.com/mattn/go-sqlite3"

	"github.com/acme/shortlink/internal/httpapi"
	"github.com/acme/shortlink/internal/store"
)

func main() {
	dsn := os.Getenv("SHORTLINK_DB")
	if dsn == "" {
		dsn = "shortlink.db"
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		log.Fatal(err)
	}
	s := store.New(db)
	addr := ":8080"
	log.Printf("listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, httpapi.New(s)))
}
